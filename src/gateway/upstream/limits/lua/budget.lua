-- One API key's budget as model.ts has it, for the scripts of this folder. Keep the two in step:
-- test/integration/gateway/budget-lua.test.ts runs both on the same random sequences against a
-- real redis-server. redis-budget.ts loads this file and each script's body, wrapped as a function
-- of (keys, args) that begins with begin(), as one Redis function library, so that the helpers
-- below are made once when it loads, not on every call (on a Redis without functions, before 7.0,
-- each script is this file and its body, run by EVALSHA).
--
-- KEYS[1]: the key's state (a hash), KEYS[2]: its send log (a sorted set of send times).
-- ARGV[1]: numbers packed as little-endian doubles (redis-budget.ts `packed`): now, the number of
-- windows, the share of them this store plans, how long a request counts as in flight when its
-- replica never reports back, then each window's count and length (shortest first). ARGV[2]: this
-- replica's tag; ARGV[3]: now as text; ARGV[4]: when a request planned now stops counting, as
-- text; then each window's lower bound, `(` and now less its length. The script's own arguments
-- follow from ARGV[ARG]. Numbers come packed and times as text, and the state's numbers are packed
-- too, because parsing and formatting numbers in Lua (strtod, printf) was most of a call's cost.
-- The state's fields: s, the key's numbers packed as doubles (struct.pack): seq, pause, pseq (seq
-- at the latest 429), k (429s in a row), cw (congestion window), tr (1: the upstream counts our
-- sends), n (requests in flight), wait (1: a replica waits on an answer), sw (when expired requests
-- in flight were last looked for), ex (when both keys expire), and while there is one the gate
-- (base, rem, reset, from, limit, rep); the turns across replicas (cl, the replica whose turn it is,
-- and nx, the one next: each `tag|from|answer`, see reserve.lua); and one field per request in
-- flight, f<seq>@<tag>, holding when it stops counting.
local PROBE, LOW, SAFE, MAX, CLAIM = {{PROBE_MS}}, {{ONE_AT_A_TIME_BELOW}}, {{SAFE_CWND}}, {{MAX_CWND}}, {{CLAIM_MS}}
local NONE, PAUSED, WINDOW, GATE, ANSWER = 0, 1, 2, 3, 4
-- The call's arguments, set by begin(): Redis runs one call at a time, so the helpers read them here.
local KEYS, ARGV, now, nw, share, flight, tag, nowText, flightText, windows, ARG, longest
-- Sends in a window, counted once per call (no script adds to the log and then counts it).
local counted

local function begin(keys, args)
  KEYS, ARGV = keys, args
  local at
  now, nw, share, flight, at = struct.unpack('<dddd', args[1])
  tag, nowText, flightText = args[2], args[3], args[4]
  windows = {}
  for i = 1, nw do
    local count, ms
    count, ms, at = struct.unpack('<dd', args[1], at)
    windows[i] = { count = count, ms = ms, since = args[4 + i] }
  end
  ARG = 5 + nw
  longest = 0
  if nw > 0 then longest = windows[nw].ms end
  counted = {}
end

-- A replica's turn (model.ts CLAIM_MS): its tag, from when it is to come for the unit that frees,
-- and whether it waits on an answer (the answer that tells it sets `from`).
local function claimOf(text)
  if not text then return nil end
  local t, from, answer = string.match(text, '^(.*)|(%-?%d+)|([01])$')
  return { tag = t, from = tonumber(from), answer = answer == '1' }
end

local function claimText(c) return c.tag .. '|' .. c.from .. '|' .. (c.answer and '1' or '0') end

-- The packed numbers, without and with a gate.
local BARE, GATED = '<dddddddddd', '<dddddddddddddddd'
-- struct.size(BARE), written out: a library's top level runs before struct is there.
local BARE_BYTES = 80

local function load()
  local st = redis.call('HMGET', KEYS[1], 's', 'cl', 'nx')
  local b = { claim = claimOf(st[2]), next = claimOf(st[3]), saved = st[1] }
  local s, tr, wait = st[1], 0, 0
  if not s then
    b.seq, b.pause, b.pseq, b.k, b.cw, b.n, b.swept, b.ex = 0, 0, 0, 0, SAFE, 0, 0, 0
  elseif #s == BARE_BYTES then
    b.seq, b.pause, b.pseq, b.k, b.cw, tr, b.n, wait, b.swept, b.ex = struct.unpack(BARE, s)
  else
    local g = {}
    b.seq, b.pause, b.pseq, b.k, b.cw, tr, b.n, wait, b.swept, b.ex, g.base, g.rem, g.reset, g.from, g.limit, g.rep =
      struct.unpack(GATED, s)
    b.gate = g
  end
  b.tr, b.wait = tr == 1, wait == 1
  return b
end

local function gateAt(b)
  local g = b.gate
  if g and g.reset > now then return g end
  return { rem = 1, reset = now + PROBE, base = b.seq, from = -1, limit = 0, rep = 0 }
end

local function allowedOf(count) return math.max(1, math.floor(count * share)) end

-- Sends in window i.
local function inWindow(i)
  if counted[i] == nil then counted[i] = redis.call('ZCOUNT', KEYS[2], windows[i].since, '+inf') end
  return counted[i]
end

-- The score of the log's i-th newest send.
local function newest(i) return tonumber(redis.call('ZRANGE', KEYS[2], -i, -i, 'WITHSCORES')[2]) end

-- The score of the oldest send in window i (the log holds some there).
local function oldestIn(i)
  return tonumber(redis.call('ZRANGEBYSCORE', KEYS[2], windows[i].since, '+inf', 'WITHSCORES', 'LIMIT', '0', '1')[2])
end

local function answersAllow(cw, left, n)
  if left <= LOW then return 1 - n end
  return cw - n
end

-- The key's room: free (-1: no bound), until, why, and what reserving needs (sends per window, gate, left).
local function measure(b)
  if b.pause > now then return 0, b.pause, PAUSED end
  if nw == 0 then return -1, now, NONE end
  local free, windowFree, used = math.huge, now, {}
  for i = 1, nw do
    local allowed = allowedOf(windows[i].count)
    local sends = inWindow(i)
    used[i] = sends
    if sends >= allowed then windowFree = math.max(windowFree, newest(allowed) + windows[i].ms) end
    free = math.min(free, allowed - sends)
  end
  if free <= 0 then return 0, windowFree, WINDOW end
  local g = gateAt(b)
  local left = g.rem - (b.seq - g.base)
  if left <= 0 then
    if g.from == -1 then return 0, g.reset, ANSWER end
    return 0, g.reset, GATE
  end
  local by = answersAllow(b.cw, left, b.n)
  if by <= 0 then return 0, now + PROBE, ANSWER end
  return math.min(free, left, by), now, NONE, used, g, left
end

-- The first window as the log has it, or the upstream's word when that has less left; nothing left
-- while paused: limit (-1: nothing known), remaining, used, reset (-1: none), paused (1/0).
local function view(b)
  local limit, remaining, used, reset, paused = -1, 0, 0, -1, 0
  local first = windows[1]
  if first then
    local sends = inWindow(1)
    limit, remaining, used = first.count, math.max(0, first.count - sends), sends
  end
  local g = b.gate
  if g and g.from ~= -1 and g.reset > now then
    local left = math.max(0, g.rem - (b.seq - g.base))
    if limit == -1 or left < remaining then
      limit, remaining, used, reset = g.limit, left, math.max(0, g.limit - left), g.reset
      first = nil
    end
  end
  -- The log's reset, asked of Redis only when the log's view is the one given.
  if first and used > 0 then reset = oldestIn(1) + first.ms end
  if limit ~= -1 and b.pause > now then remaining, reset, paused = 0, b.pause, 1 end
  return limit, remaining, used, reset, paused
end

-- Keeps the key's state and log as long as anything in them can matter: its log, its pause, its
-- requests out. Both expire at ex, renewed a minute ahead only when that falls short, so most calls
-- spend no command on it (save() sets it). ex is on the callers' clock, which may not be Redis's,
-- so it is set as a TTL; the minute ahead also covers replicas whose clocks differ by less.
local function keep(b)
  local need = now + math.max(longest, flight, b.pause - now)
  if b.ex >= need then return end
  b.ex = need + 60000
  b.renew = true
end

-- Writes what changed of the state back in one HSET, with `more` fields beside it (a request in
-- flight), then the expiry keep() set. A state Redis did not have gets one too, whatever wrote it.
local function save(b, more)
  if not b.saved then keep(b) end
  local set, del = more or {}, nil
  local tr, wait = b.tr and 1 or 0, b.wait and 1 or 0
  local g, s = b.gate, nil
  if g then
    s = struct.pack(GATED, b.seq, b.pause, b.pseq, b.k, b.cw, tr, b.n, wait, b.swept, b.ex,
      g.base, g.rem, g.reset, g.from, g.limit, g.rep)
  else
    s = struct.pack(BARE, b.seq, b.pause, b.pseq, b.k, b.cw, tr, b.n, wait, b.swept, b.ex)
  end
  if s ~= b.saved then
    set[#set + 1] = 's'
    set[#set + 1] = s
    b.saved = s
  end
  if b.moved then
    b.moved = false
    for field, c in pairs({ cl = b.claim or false, nx = b.next or false }) do
      if c then
        set[#set + 1] = field
        set[#set + 1] = claimText(c)
      else
        del = del or {}
        del[#del + 1] = field
      end
    end
  end
  if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
  if del then redis.call('HDEL', KEYS[1], unpack(del)) end
  if b.renew then
    b.renew = false
    redis.call('PEXPIRE', KEYS[1], b.ex - now)
    redis.call('PEXPIRE', KEYS[2], b.ex - now)
  end
end

-- A replica waiting on an answer of this key (marked by a refused reserve) is told of this one; a
-- turn that waited on it starts now.
local function tell(b, channel, keyId)
  if b.wait then
    b.wait = false
    redis.call('PUBLISH', channel, keyId)
    for _, c in ipairs({ b.claim or false, b.next or false }) do
      if c and c.answer and c.from > now then
        c.from = now
        b.moved = true
      end
    end
  end
end
