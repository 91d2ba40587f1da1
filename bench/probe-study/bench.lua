-- bench/probe-study/bench.lua - the Lua program of the probe study (run by lua.c).
-- Three parts, each a kind of work an interpreter spends time on: floating-point loops
-- (spectral norm), strings (formatting, concatenation, pattern matching) and tables (sort
-- with a Lua comparator). Returns one integer checksum; nothing depends on hash order,
-- addresses or time, so it is the same on every run.

local function mix(h, v)
  h = (h ~ v) * 0x100000001b3 -- 64-bit wrap-around, as Lua 5.4 integers do
  return h ~ (h >> 29)
end

-- Spectral norm (the Computer Language Benchmarks Game's algorithm).
local function A(i, j)
  local ij = i + j - 1
  return 1.0 / (ij * (ij - 1) * 0.5 + i)
end

local function Av(x, y, N)
  for i = 1, N do
    local a = 0
    for j = 1, N do a = a + x[j] * A(i, j) end
    y[i] = a
  end
end

local function Atv(x, y, N)
  for i = 1, N do
    local a = 0
    for j = 1, N do a = a + x[j] * A(j, i) end
    y[i] = a
  end
end

local function AtAv(x, y, t, N)
  Av(x, t, N)
  Atv(t, y, N)
end

local function spectral(N)
  local u, v, t = {}, {}, {}
  for i = 1, N do u[i] = 1 end
  for _ = 1, 10 do AtAv(u, v, t, N) AtAv(v, u, t, N) end
  local vBv, vv = 0, 0
  for i = 1, N do
    local ui, vi = u[i], v[i]
    vBv = vBv + ui * vi
    vv = vv + vi * vi
  end
  return math.sqrt(vBv / vv)
end

-- Strings: build a document, then scan it.
local function strings(n)
  local parts = {}
  for i = 1, n do
    parts[#parts + 1] = string.format("%d:%s:%.3f;", i, string.rep(string.char(97 + i % 26), 1 + i % 7), i / 7)
  end
  local doc = table.concat(parts)
  local h, words = 0, 0
  for w in doc:gmatch("(%a+):") do
    words = words + 1
    h = mix(h, #w)
  end
  local upper = doc:gsub("[aeiou]", string.upper)
  return mix(mix(h, words), #upper + #doc)
end

-- Tables: sort records with a comparator written in Lua.
local function tables(n)
  local seed, recs = 12345, {}
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    recs[i] = { key = seed % 100000, id = i }
  end
  table.sort(recs, function(a, b)
    if a.key ~= b.key then return a.key < b.key end
    return a.id < b.id
  end)
  local h = 0
  for i = 1, n, 97 do h = mix(h, recs[i].key * 1000003 + recs[i].id) end
  return h
end

local h = 0
h = mix(h, math.floor(spectral(250) * 1e12))
h = mix(h, strings(60000))
h = mix(h, tables(100000))
return h
