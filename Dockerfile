# The gateway's container image. Two stages: the build stage installs every dependency and compiles
# src/ to dist/, then drops the development dependencies; the runtime stage holds only what
# `node dist/main.js` reads: package.json (ESM), production node_modules, dist/ and schema/.
#
# test/integration/production-install.test.ts runs these very RUN lines, in order, in a fresh clone
# and starts the result (no Docker engine runs on the machines that test it): keep to WORKDIR, COPY,
# RUN, ENV, USER, EXPOSE, HEALTHCHECK and CMD, which it knows how to replay.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY schema ./schema
COPY src ./src
COPY scripts ./scripts
RUN npm run build
RUN npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
# The gateway listens on loopback unless told otherwise; in a container, the network is the point.
ENV HOST=0.0.0.0
WORKDIR /app
# Owned by root and read-only to the user that runs them.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/schema ./schema
USER node
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/ready', { signal: AbortSignal.timeout(2500) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The heap flags of `npm start` (docs/operations.md, "Memory"): 256 MB of old space, and young-generation
# semi-spaces of 16 MB (Node 20's default; Node 24 would let them grow to 64). They go before the
# operator's NODE_OPTIONS (`docker run -e NODE_OPTIONS=…`), whose later flags win; on node's command
# line they would win over NODE_OPTIONS instead. The shell execs node: node is PID 1 and receives
# SIGTERM itself, so `docker stop` drains requests in flight and exits 0. The drain may take
# SHUTDOWN_GRACE (25 s by default) and Docker kills after 10 s unless told: `docker stop -t 35`.
CMD ["sh", "-c", "NODE_OPTIONS=\"--max-old-space-size=256 --max-semi-space-size=16 $NODE_OPTIONS\" exec node dist/main.js"]
