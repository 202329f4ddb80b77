"""A session against a running engaged through the client openapi-python-client generated.

Run by scripts/openapi-check.sh with the generator's venv:

    python openapi-smoke.py DOC CLIENT_DIR ANSWERS_DIR

with BASE (the server's http://127.0.0.1:PORT) and KEY (an admin key) in the
environment, on a fresh organization. CLIENT_DIR holds the generated package
`engaged_client`. Every answer the server gives during the session is recorded, when it
is JSON, as ANSWERS_DIR/NNN.json: {"operationId", "status", "body"}; the session fails
when an operation whose document declares a JSON answer got none, or when a step of the
smoke session does not answer as it should.
"""

import datetime
import hashlib
import hmac
import io
import json
import os
import re
import sys
import time

doc_path, client_dir, answers_dir = sys.argv[1:4]
sys.path.insert(0, client_dir)

import httpx  # noqa: E402  (the generated client's own dependency)
from engaged_client import AuthenticatedClient, Client  # noqa: E402
from engaged_client.api.calls import get_call, put_call  # noqa: E402
from engaged_client.api.contact import (  # noqa: E402
    add_tags,
    get_consent,
    post_consent,
    inbound_email,
    inbound_sms,
    mailgun_inbound,
    remove_tags,
    request_call,
    resubscribe,
    turn_off,
    turn_on,
    unsubscribe,
)
from engaged_client.api.dnc import list_dnc, register_dnc, remove_dnc  # noqa: E402
from engaged_client.api.engagement import (  # noqa: E402
    cancel_replay,
    create_replay,
    delete_profile,
    get_engagement,
    get_profile,
    get_replay,
    list_profiles,
    list_replays,
    profile_stats,
    put_profile,
)
from engaged_client.api.events import list_events, post_event  # noqa: E402
from engaged_client.api.meetings import (  # noqa: E402
    book_meeting,
    calendar_times,
    cancel_meeting,
    delete_calendar,
    get_calendar,
    get_meeting,
    list_calendars,
    list_meetings,
    put_calendar,
    reschedule_meeting,
    rotate_feed_token,
    update_meeting,
)
from engaged_client.api.leads import (  # noqa: E402
    create_lead,
    delete_lead,
    get_lead,
    import_leads,
    import_refused,
    list_leads,
    search_leads,
    update_lead,
)
from engaged_client.api.messages import list_messages, post_message  # noqa: E402
from engaged_client.api.operations import admin_replica, healthz, openapi, readyz  # noqa: E402
from engaged_client.api.organization import get_org, update_org  # noqa: E402
from engaged_client.api.recordings import delete_recording, get_recording, put_recording  # noqa: E402
from engaged_client.api.webhooks import (  # noqa: E402
    create_webhook,
    delete_webhook,
    list_deliveries,
    list_webhooks,
    retry_delivery,
)
from engaged_client.models import (  # noqa: E402
    AddTagsBody,
    BookMeetingBody,
    CalendarInput,
    CallInput,
    ChannelsRequest,
    ConsentInput,
    EventInput,
    LeadCreate,
    LeadUpdate,
    InboundEmailBody,
    InboundSmsBody,
    MailgunInboundDataBody,
    MessageInput,
    OrgSettingsUpdate,
    ProfileInput,
    ReplayRequest,
    RegisterDncBody,
    RemoveTagsBody,
    RequestCallBody,
    RescheduleMeetingBody,
    ResubscribeRequest,
    UpdateMeetingBody,
    WebhookCreate,
)
from engaged_client.types import File  # noqa: E402

base, key = os.environ["BASE"], os.environ["KEY"]
doc = json.load(open(doc_path))

# Path templates of the document, to name the operation of each answer.
routes = []
for template, item in doc["paths"].items():
    pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
    for method, op in item.items():
        if method != "parameters":
            routes.append((method.upper(), pattern, op["operationId"]))

recorded = []


def record(response: httpx.Response) -> None:
    response.read()
    if not response.headers.get("content-type", "").startswith("application/json"):
        return
    path = response.request.url.path
    ops = [o for m, p, o in routes if m == response.request.method and p.match(path)]
    # A fixed segment (`/v1/leads/search`) wins over a parameter (`/v1/leads/{leadId}`).
    fixed = [o for m, p, o in routes if m == response.request.method and p.pattern == "^" + re.escape(path) + "$"]
    op = (fixed or ops or [None])[0]
    if op is None:
        sys.exit(f"answer of {response.request.method} {path} matches no operation")
    n = len(recorded)
    recorded.append(op)
    with open(os.path.join(answers_dir, f"{n:03}.json"), "w") as f:
        json.dump({"operationId": op, "status": response.status_code, "body": response.json()}, f)


hooks = {"event_hooks": {"response": [record]}}
api = AuthenticatedClient(base_url=base, token=key, prefix="", auth_header_name="x-api-key",
                          timeout=httpx.Timeout(20.0), httpx_args=hooks)
anonymous = Client(base_url=base, timeout=httpx.Timeout(20.0), httpx_args=hooks)


def expect(response, *statuses):
    if response.status_code not in statuses:
        sys.exit(f"{response.status_code} (expected {statuses}): {response.content[:300]!r}")
    return getattr(response, "parsed", None)


for _ in range(200):
    try:
        if readyz.sync_detailed(client=anonymous).status_code == 200:
            break
    except httpx.TransportError:
        time.sleep(0.05)
else:
    sys.exit("the server did not become ready")
expect(healthz.sync_detailed(client=anonymous), 200)
expect(openapi.sync_detailed(client=anonymous), 200)
# Replication is off in the smoke session: {"enabled": false}.
expect(admin_replica.sync_detailed(client=api), 200)

# Leads, listed with paging.
for i in range(5):
    expect(create_lead.sync_detailed(client=api, body=LeadCreate.from_dict(
        {"id": f"smoke-{i}", "firstName": "Ada", "phone": f"+1555010{3000 + i}", "email": f"ada{i}@example.com",
         "additionalInfo": {"source": "smoke", "score": i, "nested": {"ok": True}},
         "tags": [{"id": "t1", "name": "VIP"}, {"id": "t2", "name": "Solar"}]})), 201)
seen, token = [], None
epoch = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
while True:
    page = expect(list_leads.sync_detailed(client=api, limit=2, updated_since=epoch, **({"next_token": token} if token else {})), 200)
    seen += [lead.id for lead in page.leads]
    token = page.next_token if isinstance(page.next_token, str) else None
    if not token:
        break
assert sorted(seen) == [f"smoke-{i}" for i in range(5)], seen
expect(get_lead.sync_detailed("smoke-0", client=api), 200)
expect(get_lead.sync_detailed("missing", client=api), 404)
expect(update_lead.sync_detailed("smoke-0", client=api, body=LeadUpdate.from_dict({"lastName": "Lovelace"})), 200)

# Events with `types`, messages, the engagement, tags, unsubscribe.
expect(post_event.sync_detailed("smoke-0", client=api, body=EventInput.from_dict(
    {"type": "CUSTOM", "id": "ev-1", "data": {"page": "/pricing", "seconds": 42}})), 200)
expect(post_message.sync_detailed("smoke-0", client=api, body=MessageInput.from_dict(
    {"owner": "lead", "channel": "sms", "content": {"text": "Hi"}})), 200, 201)
events = expect(list_events.sync_detailed("smoke-0", client=api, types="CUSTOM"), 200)
assert [e.type_ for e in events.events] == ["CUSTOM"], events
expect(list_messages.sync_detailed("smoke-0", client=api), 200)
expect(get_engagement.sync_detailed("smoke-0", client=api), 200)
expect(add_tags.sync_detailed("smoke-1", client=api, body=AddTagsBody.from_dict(
    {"tags": [{"id": "t3", "name": "Hot"}]})), 200)
expect(remove_tags.sync_detailed("smoke-1", client=api, body=RemoveTagsBody.from_dict({"tagIds": ["t1"]})), 200)
lead = expect(get_lead.sync_detailed("smoke-1", client=api), 200)
assert sorted(t.id for t in lead.tags) == ["t2", "t3"], lead.tags
expect(unsubscribe.sync_detailed("smoke-2", client=api, body=ChannelsRequest.from_dict({"channels": ["sms"]})), 200)
# Only the lead undoes a revocation: without proof 409, with the lead's words 200.
expect(resubscribe.sync_detailed("smoke-2", client=api, body=ResubscribeRequest.from_dict({"channels": ["sms"]})), 409)
expect(resubscribe.sync_detailed("smoke-2", client=api, body=ResubscribeRequest.from_dict(
    {"channels": ["sms"], "proof": {"text": "On the phone: text me again"}})), 200)
# The consent ledger: a grant by web form, the ledger with the unsubscribe's entry above.
entry = expect(post_consent.sync_detailed("smoke-2", client=api, body=ConsentInput.from_dict(
    {"channel": "voice", "status": "granted", "source": "web_form",
     "proof": {"text": "I agree to calls", "url": "https://solar.example/quote"}})), 201)
assert entry.channel == "voice" and entry.status == "granted", entry
ledger = expect(get_consent.sync_detailed("smoke-2", client=api), 200)
assert [e.id for e in ledger.entries][-1] == entry.id, ledger
assert ledger.current.voice == "granted", ledger.current
expect(turn_off.sync_detailed("smoke-3", client=api), 200)
expect(turn_on.sync_detailed("smoke-3", client=api), 200)
expect(request_call.sync_detailed("smoke-3", client=api, body=RequestCallBody.from_dict({"direction": "OUTBOUND"})), 200, 201, 400)

# DNC.
expect(register_dnc.sync_detailed(client=api, body=RegisterDncBody.from_dict({"phone": "+15550109999"})), 200)
expect(list_dnc.sync_detailed(client=api), 200)
expect(remove_dnc.sync_detailed("+15550109999", client=api), 200)

# A call with the transcript of docs/api.md, then its recording.
call = expect(put_call.sync_detailed("smoke-call", client=api, body=CallInput.from_dict(
    {"leadId": "smoke-0", "direction": "OUTBOUND", "callStatus": "COMPLETE", "durationSeconds": 95,
     "transcript": [{"role": "agent", "text": "Hello Ada"}, {"role": "lead", "text": "Hi"}]})), 201)
assert call.transcript[0].role == "agent", call.transcript
expect(get_call.sync_detailed("smoke-call", client=api), 200)
expect(put_recording.sync_detailed("smoke-call", client=api, body=File(payload=io.BytesIO(bytes(range(256)) * 8))), 200, 201)
expect(get_recording.sync_detailed("smoke-call", client=api), 200)
expect(delete_recording.sync_detailed("smoke-call", client=api), 200)

# Search.
found = expect(search_leads.sync_detailed(client=api, q="Lovelace"), 200)
assert [lead.id for lead in found.leads] == ["smoke-0"], found

# Imports: a CSV file (the generated client sends `text/csv`), and NDJSON through the
# generated client's own httpx client with its type.
csv = b"First Name,Phone Number,email,Favourite Colour\nGrace,+15550104001,grace@example.com,blue\n"
report = expect(import_leads.sync_detailed(client=api, body=File(payload=io.BytesIO(csv), file_name="leads.csv")), 200)
assert report.created == 1 and not report.refused, report
ndjson = b'{"firstName": "Linus", "phone": "+15550104002", "tags": ["ops"]}\n{"firstName": "Ken", "phone": "+15550104003"}\n'
raw = api.get_httpx_client().post("/v1/leads/import", content=ndjson, headers={"content-type": "application/x-ndjson"})
report = expect(import_leads._build_response(client=api, response=raw), 200)
assert report.created == 2 and not report.refused, report
# A refused row: listed, counted, and fetched whole as CSV from `refusedUrl`.
bad = b"First Name,Phone Number\nNoPhone,12\n"
report = expect(import_leads.sync_detailed(client=api, body=File(payload=io.BytesIO(bad), file_name="bad.csv")), 200)
assert report.refused_count == 1 and len(report.refused) == 1, report
refused_id = report.refused_url.split("/")[-2]
whole = import_refused.sync_detailed(refused_id, client=api)
assert whole.status_code == 200 and b"NoPhone" in whole.content, whole
expect(import_refused.sync_detailed("0" * 32, client=api), 404)

# Inbound messages, profiles, the organization, webhooks.
expect(inbound_sms.sync_detailed(client=api, body=InboundSmsBody.from_dict(
    {"from": "+15550103000", "text": "Hello"})), 200)
expect(inbound_email.sync_detailed(client=api, body=InboundEmailBody.from_dict(
    {"from": "ada1@example.com", "text": "Hello", "subject": "Question"})), 200)
expect(put_profile.sync_detailed("smoke", client=api, body=ProfileInput.from_dict(
    {"business": {"name": "Acme Solar"}})), 200)
expect(list_profiles.sync_detailed(client=api), 200)
expect(get_profile.sync_detailed("smoke", client=api), 200)
expect(profile_stats.sync_detailed("smoke", client=api), 200)
# A replay of a draft: 202, or 409 without an assistant (the smoke organization has none).
expect(create_replay.sync_detailed("smoke", client=api, body=ReplayRequest.from_dict(
    {"draft": {"instructions": "Be brief."}, "conversations": 1})), 202, 409)
expect(list_replays.sync_detailed(client=api), 200)
expect(get_replay.sync_detailed("rpl_none", client=api), 404)
expect(cancel_replay.sync_detailed("rpl_none", client=api), 404)
expect(delete_profile.sync_detailed("smoke", client=api), 200)
all_day = [["00:00", "24:00"]]
expect(put_calendar.sync_detailed("smoke", client=api, body=CalendarInput.from_dict(
    {"timeZone": "UTC", "minNoticeMinutes": 0, "title": "Call with {{business.name}}",
     "hours": {d: all_day for d in ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}})), 200)
expect(list_calendars.sync_detailed(client=api), 200)
expect(get_calendar.sync_detailed("smoke", client=api), 200)
expect(rotate_feed_token.sync_detailed("smoke", client=api), 200)
times = expect(calendar_times.sync_detailed("smoke", client=api), 200)
slots = [t.start for t in times.times]
meeting = expect(book_meeting.sync_detailed("smoke-0", client=api, body=BookMeetingBody.from_dict(
    {"calendar": "smoke", "start": slots[2].isoformat()})), 201)
expect(reschedule_meeting.sync_detailed(meeting.id, client=api, body=RescheduleMeetingBody.from_dict(
    {"start": slots[3].isoformat()})), 200)
expect(get_meeting.sync_detailed(meeting.id, client=api), 200)
expect(list_meetings.sync_detailed(client=api), 200)
# A meeting that has not begun is neither kept nor missed yet: 409.
expect(update_meeting.sync_detailed(meeting.id, client=api, body=UpdateMeetingBody.from_dict(
    {"status": "completed"})), 409)
second = expect(book_meeting.sync_detailed("smoke-0", client=api, body=BookMeetingBody.from_dict(
    {"calendar": "smoke", "start": slots[5].isoformat()})), 201)
expect(cancel_meeting.sync_detailed(second.id, client=api), 200)
expect(delete_calendar.sync_detailed("smoke", client=api), 200)
org = expect(get_org.sync_detailed(client=api), 200)
secret = "smoke-signing-key"
expect(update_org.sync_detailed(client=api, body=OrgSettingsUpdate.from_dict(
    {"providers": {"email": {"kind": "sandbox", "inboundSigningKey": secret}}})), 200, 400)
stamp = str(int(time.time()))
nonce = "smoke-token-" + stamp
signed = {"sender": "ada1@example.com", "timestamp": stamp, "token": nonce, "body-plain": "Thanks",
          "signature": hmac.new(secret.encode(), (stamp + nonce).encode(), hashlib.sha256).hexdigest()}
expect(mailgun_inbound.sync_detailed(org.id, client=anonymous,
                                     body=MailgunInboundDataBody.from_dict(signed)), 200, 404)
hook = expect(create_webhook.sync_detailed(client=api, body=WebhookCreate.from_dict(
    {"url": "http://127.0.0.1:9/sink"})), 201)
expect(list_webhooks.sync_detailed(client=api), 200)
deliveries = expect(list_deliveries.sync_detailed(hook.id, client=api), 200)
delivery = deliveries.deliveries[0].id if deliveries.deliveries else "none"
expect(retry_delivery.sync_detailed(hook.id, delivery, client=api), 202, 404, 409)
expect(delete_webhook.sync_detailed(hook.id, client=api), 200)
expect(delete_lead.sync_detailed("smoke-4", client=api), 200)

# What Twilio, a recording link and an unsubscribe link call answer, unsigned: their
# refusals (JSON), through the generated client's httpx client.
raw = anonymous.get_httpx_client()
twilio = f"/v1/providers/twilio/{org.id}"
for path in ["/sms", "/sms-status", "/voice/inbound", "/voice/c1/twiml", "/voice/c1/status",
             "/voice/c1/recording", "/voice/c1/transfer"]:
    expect(raw.post(twilio + path, data={"From": "+15550103000"}), 403, 404)
expect(raw.get(twilio + "/voice/c1/relay"), 400, 403, 404)
expect(raw.post(twilio + "/voice/c1/warm", params={"step": "answer", "attempt": "1"},
                data={"From": "+15550103000"}), 400, 403, 404)
expect(raw.get(f"/v1/recordings/{org.id}/smoke-call", params={"expires": "1", "sig": "00"}), 403, 404, 410)
expect(raw.get("/v1/unsubscribe/not-a-token"), 403, 404)
expect(raw.post("/v1/unsubscribe/not-a-token", data={"List-Unsubscribe": "One-Click"}), 403, 404)
expect(raw.get("/v1/calendars/smoke/feed.ics", params={"token": "not-the-token"}), 404)

# Web chat from a page of an allowed origin: a session, the visitor's message, the
# stream refusing a wrong token, the contact form with the consent box ticked, a
# foreign origin refused, and a call's token refused while voice is off.
site = "https://shop.example"
expect(update_org.sync_detailed(client=api, body=OrgSettingsUpdate.from_dict(
    {"webchat": {"enabled": True, "allowedOrigins": [site], "consentText": "I agree to texts from Acme."}})), 200)
chat = raw.post(f"/webchat/{org.id}/sessions", headers={"Origin": site})
expect(chat, 201)
session, chat_token = chat.json()["sessionId"], chat.json()["token"]
visitor = {"Origin": site, "Authorization": f"Bearer {chat_token}"}
expect(raw.post(f"/webchat/{org.id}/sessions/{session}/messages", headers=visitor, json={"text": "Hello"}), 202)
expect(raw.get(f"/webchat/{org.id}/sessions/{session}/events", headers={"Origin": site},
               params={"token": "not-the-token"}), 401)
expect(raw.post(f"/webchat/{org.id}/sessions/{session}/contact", headers=visitor,
                json={"name": "Web Visitor", "email": "visitor@example.com", "consent": True,
                      "pageUrl": site + "/pricing"}), 200)
expect(raw.post(f"/webchat/{org.id}/sessions", headers={"Origin": "https://evil.example"}), 403)
# A call from the browser: web chat's voice is off here, so the token is refused in words.
expect(raw.post(f"/webchat/{org.id}/sessions/{session}/voice-token", headers=visitor), 404)

json_ops = {op["operationId"] for item in doc["paths"].values() for m, op in item.items() if m != "parameters"
            and any("application/json" in r.get("content", {}) for r in op["responses"].values())}
missing = sorted(json_ops - set(recorded))
if missing:
    sys.exit(f"no answer recorded for {missing}")
print(f"smoke session through the generated Python client: {len(recorded)} JSON answers of {len(set(recorded))} operations")
