-- A replica back on Redis after planning on its local share (shared-budget.ts): a pause it saw
-- meanwhile holds here too (ARGV[ARG]: until when, 0: none), the sends it made join the log (ARGV
-- from ARG + 1: their times), its requests Redis still counts in flight
-- from before are done (their answers were recorded elsewhere or never), and the upstream's word is
-- dropped, so the key's next request is one probe whose answer is the truth again.
local b = load()
b.pause = math.max(b.pause, tonumber(ARGV[ARG]))
for i = ARG + 1, #ARGV do
  redis.call('ZADD', KEYS[2], tonumber(ARGV[i]), 'l' .. (i - ARG) .. ':' .. ARGV[i] .. '@' .. tag)
end
local all, live, suffix = redis.call('HGETALL', KEYS[1]), 0, '@' .. tag
for i = 1, #all, 2 do
  local field = all[i]
  if string.sub(field, 1, 1) == 'f' then
    if string.sub(field, -#suffix) == suffix or tonumber(all[i + 1]) <= now then
      redis.call('HDEL', KEYS[1], field)
    else
      live = live + 1
    end
  end
end
b.gate, b.n = nil, live
keep(b)
save(b)
if #ARGV > ARG then redis.call('PEXPIRE', KEYS[2], b.ex - now) end
return live
