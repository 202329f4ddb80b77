-- wrk script: POST /v1/leads/{id}/events with a fresh event id per request, spread over
-- the seeded leads `lead-0` .. `lead-{LEADS-1}`; TARGET=baseline posts to the bare
-- baseline's /write instead. RUN names the run in the ids. Used by benches/load.sh and
-- benches/replica-standby.py.
wrk.headers["content-type"] = "application/json"
local leads = tonumber(os.getenv("LEADS") or "1")
local run = os.getenv("RUN") or "r"
local target = os.getenv("TARGET") or "engaged"
local threads = 0
local counter = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function request()
  counter = counter + 1
  local body = string.format('{"type":"CUSTOM","id":"%s-%d-%d","data":{"n":%d}}', run, tid, counter, counter)
  local path = "/write"
  if target == "engaged" then
    path = string.format("/v1/leads/lead-%d/events", (counter * 7 + tid * 1000003) % leads)
  end
  return wrk.format("POST", path, nil, body)
end
