-- Hold each connection's first request for START_MS (all connections are open by then,
-- so accepting them is not measured), then spread those first requests uniformly over
-- SPREAD_MS, so arrivals are steady rather than one burst. At the end, print wrk's
-- latency distribution (microseconds) in a form the bench parses.
local start_ms = tonumber(os.getenv("START_MS") or "0")
local spread_ms = tonumber(os.getenv("SPREAD_MS") or "0")
local connections = tonumber(os.getenv("CONNECTIONS_PER_THREAD") or "0")
local first = 0

delay = function()
  if first < connections then
    first = first + 1
    return start_ms + math.random(0, spread_ms)
  end
  return 0
end

done = function(summary, latency, requests)
  io.write(string.format("requests %d\n", summary.requests))
  io.write(string.format("errors %d %d %d %d %d\n", summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.status, summary.errors.timeout))
  for _, p in ipairs({ 0, 50, 90, 99, 99.9 }) do
    io.write(string.format("p%s %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("p100 %d\n", latency.max))
  io.write(string.format("mean %f\n", latency.mean))
end
