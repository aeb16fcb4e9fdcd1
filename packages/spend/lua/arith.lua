-- What a script costs Redis is mostly per C call (bench/spend-scripts.ts, callgrind): every
-- `redis.call`, `tonumber`, `string.*` call and new string or table is about 1–6 thousand
-- instructions, every KEYS/ARGV element about 1 thousand, every helper defined in a script body a
-- closure made on every call. So the helpers below avoid C calls on the common path (canonical
-- amounts below 10^15 units), each script defines only the helpers it uses, and constants are not
-- parsed from ARGV more than once.
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
-- a + b for non-negative decimal integer strings, exact at any length. Below 10^15 (operands of at
-- most 15 digits: $100,000 in units) both the operands and their sum are exact in a Lua double
-- (< 2^53), so the digit loop, the costliest part of the scripts, is only for larger amounts. The
-- operands are decimal strings; Lua's arithmetic reads them (as tonumber would, one C call fewer).
local function add(a, b)
  if #a < 16 and #b < 16 then return string.format('%d', a + b) end
  local out, carry = {}, 0
  local i, j = #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local d = carry
    if i > 0 then d = d + string.byte(a, i) - 48; i = i - 1 end
    if j > 0 then d = d + string.byte(b, j) - 48; j = j - 1 end
    out[#out + 1] = string.char(48 + d % 10)
    carry = (d - d % 10) / 10
  end
  local r = string.gsub(string.reverse(table.concat(out)), '^0+', '')
  if r == '' then return '0' end
  return r
end
-- a - b for non-negative decimal integer strings (a >= b; '0' when b > a), exact at any length.
local function sub(a, b)
  if not gt(a, b) then return '0' end
  if #a < 16 then return string.format('%d', a - b) end
  local out, borrow = {}, 0
  local i, j = #a, #b
  while i > 0 do
    local d = string.byte(a, i) - 48 - borrow
    if j > 0 then d = d - (string.byte(b, j) - 48); j = j - 1 end
    if d < 0 then d = d + 10; borrow = 1 else borrow = 0 end
    out[#out + 1] = string.char(48 + d)
    i = i - 1
  end
  local r = string.gsub(string.reverse(table.concat(out)), '^0+', '')
  if r == '' then return '0' end
  return r
end
-- An amount field as a canonical non-negative decimal string (missing or negative -> '0').
local function amount(v)
  if not v then return '0' end
  local c = string.byte(v)
  if c == nil or c == 45 then return '0' end
  if c ~= 48 then return v end
  local r = string.gsub(v, '^0+', '')
  if r == '' then return '0' end
  return r
end
-- The amount of a hold "<units>|<expires ms>".
local function units(v)
  return string.sub(v, 1, string.find(v, '|', 1, true) - 1)
end
