import { describe, expect, it, vi } from 'vitest';
import { createLogger, requestLogger } from '../../../../src/gateway/observability/logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const root = createLogger(level, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { root, lines };
}

describe('requestLogger', () => {
  it('writes lines that name the request, with credentials redacted', () => {
    const { root, lines } = capture('info');
    const logger = requestLogger(root, 'req-1');
    logger.info({ key: 'secret-key', headers: { authorization: 'Bearer secret' } }, 'upstream request failed');
    logger.warn({ status: 502 }, 'second line');
    logger.error('a message alone' as unknown as object);
    expect(lines).toMatchObject([
      {
        level: 30,
        reqId: 'req-1',
        key: '[redacted]',
        headers: { authorization: '[redacted]' },
        msg: 'upstream request failed',
      },
      { level: 40, reqId: 'req-1', status: 502, msg: 'second line' },
      { level: 50, reqId: 'req-1', msg: 'a message alone' },
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret');
  });

  it('makes the child only when a line is written at a level that is on, and then only once', () => {
    const { root, lines } = capture('info');
    const child = vi.spyOn(root, 'child');
    const logger = requestLogger(root, 'req-2');
    logger.debug({ operation: 'q' }, 'graphql operation');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
    logger.info({}, 'one');
    logger.info({}, 'two');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((line) => line.msg)).toEqual(['one', 'two']);
  });

  it('follows the level the parent has when each line is written', () => {
    const { root, lines } = capture('warn');
    const logger = requestLogger(root, 'req-3');
    logger.info({}, 'not written');
    root.level = 'debug';
    logger.debug({}, 'written');
    expect(lines).toMatchObject([{ reqId: 'req-3', msg: 'written' }]);
  });
});
