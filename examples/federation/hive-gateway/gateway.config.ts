/**
 * Hive Gateway's configuration for the federation example; `hive-gateway` loads it from its working
 * directory (this folder). A plain object, so the project type-checks it without Hive Gateway
 * installed; where @graphql-hive/gateway is a dependency, wrap it in its `defineConfig` for types.
 */

interface SubgraphRequest {
  readonly request: Request;
  readonly subgraphName: string;
}

interface Result {
  readonly extensions?: Record<string, unknown>;
}

/** W3C Trace Context (https://www.w3.org/TR/trace-context/): the client's trace continues in the subgraphs. */
const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

/** The pet store subgraph's last `extensions.rateLimit` in each client operation, by its context. */
const rateLimits = new WeakMap<object, unknown>();

/**
 * Hive Gateway builds the client's response from the subgraphs' data and errors only and drops their
 * top-level `extensions`. This copies the pet store subgraph's `rateLimit` (the client key's budget)
 * onto the response, the last one seen when an operation calls the subgraph more than once.
 */
const rateLimitPassThrough = {
  onSubgraphExecute({
    subgraphName,
    executionRequest,
  }: {
    subgraphName: string;
    executionRequest: { context?: object };
  }) {
    const context = executionRequest.context;
    if (subgraphName !== 'petstore' || !context) return;
    return ({ result }: { result: Result | AsyncIterable<Result> }) => {
      const rateLimit = Symbol.asyncIterator in result ? undefined : result.extensions?.rateLimit;
      if (rateLimit !== undefined) rateLimits.set(context, rateLimit);
    };
  },
  onExecute({ args }: { args: { contextValue: object } }) {
    return {
      onExecuteDone({
        result,
        setResult,
      }: {
        result: Result | AsyncIterable<Result>;
        setResult(result: Result): void;
      }) {
        const rateLimit = rateLimits.get(args.contextValue);
        if (rateLimit === undefined || Symbol.asyncIterator in result) return;
        setResult({ ...result, extensions: { ...result.extensions, rateLimit } });
      },
    };
  },
};

export const gatewayConfig = {
  propagateHeaders: {
    // Hive Gateway sends no client header to a subgraph unless it is named here. The pet store
    // subgraph forwards the client's bearer key upstream, so each client spends its own key's budget;
    // the adoptions subgraph needs no key and is not given one.
    fromClientToSubgraphs: ({ request, subgraphName }: SubgraphRequest) => {
      const headers: Record<string, string | null> = {};
      for (const name of TRACE_HEADERS) headers[name] = request.headers.get(name);
      if (subgraphName === 'petstore') headers.authorization = request.headers.get('authorization');
      return headers;
    },
  },
  plugins: () => [rateLimitPassThrough],
};
