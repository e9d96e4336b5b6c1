-- A replica's lease (shared-budget.ts): KEYS[1] is the replicas' sorted set, scored by each one's
-- last beat. ARGV: now, this replica's id, how long a beat holds its lease, how long one whose lease
-- lapsed counts as away (planning on its local share) before it counts as gone, and since when a
-- beat counts (0: any within the lease; a replica back from losing Redis counts only the others that
-- beat after it came back, since one that lost Redis too may plan alone while its lease still holds).
-- Returns {alive, away}: those whose lease holds, and those away.
local now, lease, away = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local since = math.max(now - lease, tonumber(ARGV[5]))
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - away)
redis.call('PEXPIRE', KEYS[1], away)
local alive = redis.call('ZCOUNT', KEYS[1], since, '+inf')
return { alive, redis.call('ZCARD', KEYS[1]) - alive }
