-- wrk script for bench/peerbench.
-- Arguments (after "--"): mode path count [tag]
--   mode  one    every request GETs path
--         random path .. "&k=" .. N, N uniform in [0, count)
--         unique path .. "&u=" .. tag .. "-" .. thread .. "-" .. counter (every URL a miss)
--         range  path with "Range: bytes=X-(X+count-1)", X a random multiple of count
--                below the object size (arg 4, bytes)
-- Each thread draws from its own fixed seed, so every system sees the same sequence.
-- done() prints one line, "PEERBENCH {json}", that bench/peerbench parses.

local threads = {}
local counter = 1

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  mode = args[1] or "one"
  path = args[2] or "/"
  count = tonumber(args[3] or "1")
  extra = args[4] or ""
  math.randomseed(1000 + (tid or 0))
  if mode == "one" then
    wrk.path = path
  end
end

function request()
  if mode == "random" then
    return wrk.format("GET", path .. "&k=" .. math.random(0, count - 1))
  elseif mode == "unique" then
    counter = counter + 1
    return wrk.format("GET", path .. "&u=" .. extra .. "-" .. tid .. "-" .. counter)
  elseif mode == "range" then
    local size = tonumber(extra)
    local slots = math.floor(size / count)
    local off = math.random(0, slots - 1) * count
    return wrk.format("GET", path, { Range = "bytes=" .. off .. "-" .. (off + count - 1) })
  end
  return wrk.format("GET", path)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'PEERBENCH {"duration_us":%d,"requests":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.duration, summary.requests, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    e.connect, e.read, e.write, e.status, e.timeout))
end
