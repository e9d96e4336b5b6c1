/**
 * Apollo's own integration test suite, run against this project's HTTP edge (`createHttpHandler`):
 * every Apollo Server integration (express, standalone, lambda, …) proves with it that it is a
 * conformant one. Each server the suite asks for is a real Apollo Server with the suite's options,
 * served through the edge by a node:http server on a loopback port 0, as `createGateway` serves
 * the gateway's own.
 *
 * The suite is written for Jest; vitest.config.ts points its `@jest/globals` import at
 * test/helpers/jest-globals.ts. Jest itself, a peer dependency of the suite, is installed but never
 * loaded; package.json overrides it to 29 because jest 30 brings a resolver with per-platform
 * binaries that the registry these machines use holds only in part, and `npm ci` then fails.
 * Nothing is skipped here. The suite skips on its own the tests that
 * need graphql 17 (incremental delivery: this project is on graphql 16), unless
 * INCREMENTAL_DELIVERY_TESTS_ENABLED is set.
 */

import { createServer as createNodeServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, type BaseContext } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { type CreateServerForIntegrationTests, defineIntegrationTestSuite } from '@apollo/server-integration-testsuite';
import { afterAll, expect } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createHttpHandler } from '../../../src/gateway/edge/http.js';

// The edge's own default body limit, so the suite meets the edge as the gateway configures it.
const { maxBodyBytes } = parseConfig({}).limits;

const httpServers: Server[] = [];
const edgeErrors: unknown[] = [];

const createServer: CreateServerForIntegrationTests = async (serverOptions, testOptions) => {
  const httpServer = createNodeServer();
  httpServers.push(httpServer);
  // As createGateway does: stopping Apollo stops the listener first and lets requests in flight finish.
  const apollo = new ApolloServer<BaseContext>({
    ...serverOptions,
    plugins: [...(serverOptions.plugins ?? []), ApolloServerPluginDrainHttpServer({ httpServer })],
  });
  await apollo.start();
  httpServer.on(
    'request',
    createHttpHandler<BaseContext>({
      apollo,
      context: async () => (testOptions?.context ? testOptions.context() : {}),
      maxBodyBytes,
      logger: { error: (fields: unknown) => void edgeErrors.push(fields), info: () => {} },
    }),
  );
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = httpServer.address() as AddressInfo;
  return { server: apollo, url: `http://127.0.0.1:${port}/graphql` };
};

defineIntegrationTestSuite(createServer);

afterAll(async () => {
  // The suite stops the last server each test made; a test that makes two leaves the first one
  // running. Close those here, by their own handle, and check that none is left listening.
  await Promise.all(
    httpServers
      .filter((server) => server.listening)
      .map(
        (server) =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
  );
  expect(httpServers.filter((server) => server.listening)).toEqual([]);
  // The edge's own 500 fallback is for faults of the edge; no conformant request should reach it.
  expect(edgeErrors).toEqual([]);
});
