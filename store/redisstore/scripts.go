package redisstore

import (
	"sync"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts that make each multi-key operation atomic. redis.Script
// runs them with EVALSHA and falls back to EVAL when the server's script
// cache does not have them (after a restart or SCRIPT FLUSH). Each is
// made (its SHA-1 taken) on first use, not in every process that links
// the store.
//
// Every key a script touches carries the namespace's hash tag, so on Redis
// Cluster they are all in the slot of KEYS[1]. The listing and the index
// clean-up read session hashes whose names they build from the index
// members; those names are not in KEYS (they are not known before the
// script runs), but they are in the same slot, which the node running the
// script serves. Redis refuses the access with an error, never misroutes
// it, if that ever did not hold.

// luaHelpers are shared by the scripts that walk the index.
const luaHelpers = `
-- idOf returns the session id of index member m (see member in keys.go):
-- what follows the first '~' after the timestamp.
local function idOf(m)
  local sep = string.find(m, '~', 17, true)
  if not sep then
    error('spool: malformed index member')
  end
  return string.sub(m, sep + 1)
end

-- live reports whether member m still stands for its session: the
-- session's hash names m as its member. A session that expired, or that
-- expired and started again under the same id, leaves a stale member.
local function live(prefix, m)
  return redis.call('HGET', prefix .. idOf(m) .. ':info', 'm') == m
end
`

// appendScript appends one entry if its parent is the session's head.
//
// KEYS: log, info, index, fence.
// ARGV: 1 parent id, 2 entry id, 3 wire line, 4 timestamp (unix ns),
// 5 index member for the timestamp, 6 "1" when the entry is a message,
// 7 title candidate or "", 8 pending approvals delta ("1", "-1" or "0"),
// 9 TTL in ms (0: none), 10 TTL in ms while an approval is pending (0:
// keep until deleted), 11 how many index members to sample for stale
// ones, 12 the namespace's session key prefix, 13 a nonce of this Append call,
// 14 "1" when the entry renames the session (its title candidate replaces
// the title), 15 "1" when the entry is a compaction.
//
// The hash field compactions counts the compaction entries. A session
// written before the field existed has none: its next append counts the
// compactions of its list once (until then Stat and List report 0).
//
// go-redis sends a command again when the connection fails after it was
// written, so the script may run twice for one call; the nonce, kept in
// the hash, lets the second run report the first one's success instead of
// a conflict. A new Append call of the same entry has a new nonce, and
// conflicts. A nonce in the fence set belongs to a call that Append
// reported as not applied (see settleScript); a copy of it that reaches
// the server late must not apply it after all.
//
// Returns {1} when appended, {0, head} on a conflict, {2, length} when the
// session's list and hash disagree about whether it exists, {3} when the
// call was fenced off.
var appendScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(luaHelpers + `
local log, info, idx = KEYS[1], KEYS[2], KEYS[3]
local n0 = redis.call('LLEN', log)
local h = redis.call('HMGET', info, 'head', 'm', 'title', 'pending', 'msgs', 'op', 'compactions')
local head, old, title = h[1], h[2], h[3]
local pending, msgs = tonumber(h[4] or '0') or 0, tonumber(h[5] or '0') or 0
if (head == false) ~= (n0 == 0) then
  return {2, n0}
end
head = head or ''
if head ~= ARGV[1] then
  if head == ARGV[2] and h[6] == ARGV[13] then
    -- This very call was applied already: the client sent it again
    -- after losing the connection or timing out on the reply.
    return {1}
  end
  return {0, head}
end
if redis.call('SISMEMBER', KEYS[4], ARGV[13]) == 1 then
  return {3}
end
local compactions = tonumber(h[7] or '')
if not compactions then
  -- A session from before the count (or a new one): count its list once.
  compactions = 0
  for _, l in ipairs(n0 > 0 and redis.call('LRANGE', log, 0, -1) or {}) do
    local ok, d = pcall(cjson.decode, l)
    if ok and type(d) == 'table' and d.type == 'session.compaction' then
      compactions = compactions + 1
    end
  end
end

-- bytewise a < b for two strings of the same length; Lua's own string
-- comparison follows the server's locale.
local function before(a, b)
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return false
end

-- Each redis.call costs more than the Lua around it, so the hash is read
-- with one HMGET above and written with one HSET below.
local ttl = tonumber(ARGV[9])
local idxNew = ttl > 0 and redis.call('EXISTS', idx) == 0
local n = redis.call('RPUSH', log, ARGV[3])
local f = {'head', ARGV[2], 'n', n, 'op', ARGV[13]}
local function put(k, v)
  f[#f + 1] = k
  f[#f + 1] = v
end
if n == 1 then
  title, pending, msgs, compactions = '', 0, 0, 0
  put('started', ARGV[4])
  put('last', ARGV[4])
  put('m', ARGV[5])
  redis.call('ZADD', idx, 0, ARGV[5])
elseif not old or before(string.sub(ARGV[5], 1, 16), string.sub(old, 1, 16)) then
  -- Newer activity: the session moves to its new place in the index.
  -- Adding before removing keeps the index from being emptied, which
  -- would delete it and lose its expiry.
  put('last', ARGV[4])
  put('m', ARGV[5])
  redis.call('ZADD', idx, 0, ARGV[5])
  if old then
    redis.call('ZREM', idx, old)
  end
end
if ARGV[6] == '1' then
  msgs = msgs + 1
end
if ARGV[7] ~= '' and (not title or title == '' or ARGV[14] == '1') then
  title = ARGV[7]
end
if ARGV[8] == '1' then
  pending = pending + 1
elseif ARGV[8] == '-1' and pending > 0 then
  pending = pending - 1
end
if ARGV[15] == '1' then
  compactions = compactions + 1
end
put('msgs', msgs)
put('pending', pending)
put('compactions', compactions)
put('title', title or '')
redis.call('HSET', info, unpack(f))

if ttl <= 0 then
  -- Keys that a store with a TTL wrote stop expiring.
  if redis.call('PTTL', info) ~= -1 or redis.call('PTTL', idx) ~= -1 then
    redis.call('PERSIST', log)
    redis.call('PERSIST', info)
    redis.call('PERSIST', idx)
  end
  return {1}
end
local keep = ttl
if pending > 0 then
  keep = tonumber(ARGV[10])
end
if keep <= 0 then
  redis.call('PERSIST', log)
  redis.call('PERSIST', info)
  redis.call('PERSIST', idx)
else
  redis.call('PEXPIRE', log, keep)
  redis.call('PEXPIRE', info, keep)
  -- The index outlives every session in it; one that never expires
  -- (pttl -1, written without a TTL) stays so.
  local cur = redis.call('PTTL', idx)
  if idxNew or (cur >= 0 and cur < keep) then
    redis.call('PEXPIRE', idx, keep)
  end
end
-- Expired sessions leave their members behind; sample a few and drop the
-- stale ones, as Redis samples keys for its own active expiry.
local sample = redis.call('ZRANDMEMBER', idx, tonumber(ARGV[11]))
for _, m in ipairs(sample) do
  if not live(ARGV[12], m) then
    redis.call('ZREM', idx, m)
  end
end
return {1}
`)
})

// settleScript finds out, after an append script was sent but its reply
// never came back, whether the call was applied, and makes sure that it
// will not be applied later.
//
// KEYS: info, log, fence. ARGV: 1 the call's nonce, 2 its wire line, 3 how
// long to keep the fence, in ms.
//
// The nonce goes into the fence set first, which the append script
// checks, so that a copy of the call still on its way to the server (in a
// socket buffer, a TCP retransmission) is refused when it arrives: what
// this script finds stays true. The call was applied if the session's last
// append is this call (its nonce), or, when other appends followed it, if
// its line is in the list: the line holds the entry's id, which no other
// entry has. LPOS walks from the tail, where a recent append is, but scans
// the whole list when the line is not there; this runs only after a
// failure.
//
// Returns 1 when the entry is in the session, 0 when it is not.
var settleScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
if redis.call('HGET', KEYS[1], 'op') == ARGV[1] then
  return 1
end
if redis.call('LPOS', KEYS[2], ARGV[2], 'RANK', -1) then
  return 1
end
return 0
`)
})

// listScript returns one page of a namespace's index with each session's hash,
// dropping stale members on the way.
//
// KEYS: index. ARGV: 1 the namespace's session key prefix, 2 the ZRANGEBYLEX
// lower bound ("-" or "(member"), 3 the page size.
//
// Returns {more, m1, h1, m2, h2, ...}: more is 1 when members follow the
// page, each m is a member and each h its session's HGETALL.
var listScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(luaHelpers + `
local idx, prefix, bound, want = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {0}
local got = 0
while got < want do
  local ms = redis.call('ZRANGEBYLEX', idx, bound, '+', 'LIMIT', 0, want - got)
  if #ms == 0 then
    return out
  end
  for _, m in ipairs(ms) do
    local h = redis.call('HGETALL', prefix .. idOf(m) .. ':info')
    local cur
    for i = 1, #h, 2 do
      if h[i] == 'm' then
        cur = h[i + 1]
      end
    end
    if cur == m then
      out[#out + 1] = m
      out[#out + 1] = h
      got = got + 1
    else
      redis.call('ZREM', idx, m)
    end
  end
  bound = '(' .. ms[#ms]
end
if #redis.call('ZRANGEBYLEX', idx, bound, '+', 'LIMIT', 0, 1) > 0 then
  out[1] = 1
end
return out
`)
})

// deleteScript removes a session: its entries, its hash and its member.
//
// KEYS: log, info, index. ARGV: 1 the member the session must still have,
// or "" to delete whatever it holds.
//
// Returns the number of keys removed (0 when ARGV[1] no longer matches).
var deleteScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
local m = redis.call('HGET', KEYS[2], 'm')
if ARGV[1] ~= '' and m ~= ARGV[1] then
  return 0
end
if m then
  redis.call('ZREM', KEYS[3], m)
end
return redis.call('UNLINK', KEYS[1], KEYS[2])
`)
})

// renewScript extends a lock that still holds the caller's token.
// KEYS: lock. ARGV: 1 token, 2 lease in ms. Returns 1 when renewed.
var renewScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)
})

// releaseScript deletes a lock that still holds the caller's token.
// KEYS: lock. ARGV: 1 token. Returns 1 when released.
var releaseScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)
})
