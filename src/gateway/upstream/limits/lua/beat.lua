-- A replica's lease (shared-budget.ts): KEYS[1] is the replicas' sorted set, scored by each one's
-- last beat. ARGV: now, this replica's id, how long a beat holds its lease, how long one whose lease
-- lapsed counts as away (planning on its local share) before it counts as gone.
-- Returns {alive, away}: those whose lease holds, and those away.
local now, lease, away = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - away)
redis.call('PEXPIRE', KEYS[1], away)
local alive = redis.call('ZCOUNT', KEYS[1], now - lease, '+inf')
return { alive, redis.call('ZCARD', KEYS[1]) - alive }
