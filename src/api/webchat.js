/*! engaged web chat widget: served by engaged at /webchat.js, embedded in its binary.
 * <script src="https://<engaged>/webchat.js" data-org="<org id>" async></script>
 * Vanilla, no dependency. Its UI lives in a shadow root; every text a visitor, the
 * assistant or a person wrote is inserted with textContent, never as HTML.
 * When the organization's web chat offers voice, a "Call" button places a call from the
 * browser with Twilio's Voice JavaScript SDK, which engaged vendors and serves itself
 * (loaded on the first call, never from a CDN). */
(function () {
  "use strict";
  var script = document.currentScript ||
    document.querySelector('script[src*="/webchat.js"][data-org]');
  if (!script || !script.getAttribute("data-org")) return;
  var org = script.getAttribute("data-org");
  var base = new URL(script.src, location.href).origin;
  var api = base + "/webchat/" + encodeURIComponent(org) + "/sessions";
  var storeKey = "engaged-webchat:" + org;
  var MONTH = 30 * 24 * 3600 * 1000;
  var MAX = 1000;
  var SDK = base + "/webchat/twilio-voice-2.18.5.js";

  var session = null; // {sessionId, token, at}
  var stream = null;
  var seen = {};
  var consentText = "";
  var restarted = false;

  function load() {
    try {
      var s = JSON.parse(localStorage.getItem(storeKey) || "null");
      if (s && s.sessionId && s.token && Date.now() - s.at < MONTH) return s;
    } catch (e) { /* storage off: a session per page */ }
    return null;
  }
  function save() {
    if (!session) return;
    session.at = Date.now();
    try { localStorage.setItem(storeKey, JSON.stringify(session)); } catch (e) { /* ignore */ }
  }
  function forget() {
    session = null;
    try { localStorage.removeItem(storeKey); } catch (e) { /* ignore */ }
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) node.setAttribute(k, attrs[k]);
    if (text != null) node.textContent = text;
    return node;
  }

  var css = [
    ":host{all:initial}",
    "[hidden]{display:none !important}",
    "*{box-sizing:border-box;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:15px}",
    ".launch{position:fixed;right:16px;bottom:16px;z-index:2147483000;border:0;border-radius:24px;padding:12px 18px;background:#1d4ed8;color:#fff;cursor:pointer;box-shadow:0 2px 8px rgba(0,0,0,.25)}",
    ".launch:focus-visible,button:focus-visible,input:focus-visible,textarea:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}",
    ".panel{position:fixed;right:16px;bottom:72px;z-index:2147483000;width:min(380px,calc(100vw - 32px));max-height:min(560px,calc(100vh - 96px));display:flex;flex-direction:column;background:#fff;color:#111;border:1px solid #ccc;border-radius:12px;box-shadow:0 4px 24px rgba(0,0,0,.2);overflow:hidden}",
    ".panel[hidden]{display:none}",
    "header{display:flex;align-items:center;justify-content:space-between;padding:10px 12px;background:#1d4ed8;color:#fff}",
    "header h2{margin:0;font-size:16px;font-weight:600}",
    "header button{background:transparent;border:0;color:#fff;font-size:20px;cursor:pointer;padding:2px 8px}",
    ".log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;min-height:120px}",
    ".line{max-width:85%;padding:8px 10px;border-radius:10px;white-space:pre-wrap;overflow-wrap:anywhere;line-height:1.35}",
    ".visitor{align-self:flex-end;background:#1d4ed8;color:#fff}",
    ".assistant,.person{align-self:flex-start;background:#f1f5f9;color:#111}",
    ".notice{align-self:center;color:#555;font-size:13px}",
    ".who{display:block;font-size:12px;color:#444;margin-bottom:2px}",
    ".status{padding:0 12px;color:#b91c1c;font-size:13px;min-height:0}",
    "form{display:flex;gap:8px;padding:10px 12px;border-top:1px solid #e5e7eb}",
    "textarea{flex:1;resize:none;border:1px solid #9ca3af;border-radius:8px;padding:8px;min-height:40px;color:#111;background:#fff}",
    "button.send,.contact button[type=submit]{border:0;border-radius:8px;padding:8px 14px;background:#1d4ed8;color:#fff;cursor:pointer}",
    ".more{background:none;border:0;color:#1d4ed8;text-decoration:underline;cursor:pointer;padding:0 12px 8px;text-align:left}",
    ".contact{flex-direction:column;align-items:stretch}",
    ".contact[hidden]{display:none}",
    ".contact label{display:flex;flex-direction:column;gap:2px;font-size:13px}",
    ".contact input[type=text],.contact input[type=tel],.contact input[type=email]{border:1px solid #9ca3af;border-radius:6px;padding:6px;color:#111;background:#fff}",
    ".contact .consent{flex-direction:row;align-items:flex-start;gap:6px}",
    ".call{display:flex;align-items:center;gap:8px;padding:0 12px 8px}",
    ".call[hidden]{display:none}",
    ".call button{border:0;border-radius:8px;padding:6px 12px;background:#15803d;color:#fff;cursor:pointer}",
    ".call button.hang{background:#b91c1c}",
    ".call button:disabled{opacity:.6;cursor:default}",
    ".call-state{color:#333;font-size:13px;margin:0}",
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}",
    "@media (max-width:420px){.panel{right:0;left:0;bottom:0;width:100vw;max-height:85vh;border-radius:12px 12px 0 0}.launch{right:12px;bottom:12px}}"
  ].join("\n");

  var host = el("div", { "data-engaged-webchat": "" });
  var root = host.attachShadow({ mode: "open" });
  try {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } catch (e) {
    root.appendChild(el("style", null, css));
  }

  var launch = el("button", { "class": "launch", type: "button", "aria-expanded": "false", "aria-controls": "engaged-chat" }, "Chat with us");
  var panel = el("section", { "class": "panel", id: "engaged-chat", role: "dialog", "aria-label": "Chat", hidden: "" });
  var header = el("header");
  header.appendChild(el("h2", null, "Chat"));
  var close = el("button", { type: "button", "aria-label": "Close the chat" }, "\u00d7");
  header.appendChild(close);
  var log = el("div", { "class": "log", role: "log", "aria-live": "polite", "aria-label": "Messages" });
  var status = el("p", { "class": "status", role: "status", "aria-live": "assertive" });
  var form = el("form", { "aria-label": "Send a message" });
  var label = el("label", { "for": "engaged-chat-text", "class": "sr" }, "Your message");
  var input = el("textarea", { id: "engaged-chat-text", rows: "2", maxlength: String(MAX), placeholder: "Write a message\u2026" });
  var send = el("button", { "class": "send", type: "submit" }, "Send");
  form.appendChild(label);
  form.appendChild(input);
  form.appendChild(send);
  var more = el("button", { "class": "more", type: "button", "aria-expanded": "false", "aria-controls": "engaged-chat-contact" }, "Leave your phone or email");
  var contact = el("form", { "class": "contact", id: "engaged-chat-contact", hidden: "", "aria-label": "Your contact" });
  function field(name, type, text, auto) {
    var l = el("label", null, text);
    var i = el("input", { type: type, name: name, autocomplete: auto, maxlength: "200" });
    l.appendChild(i);
    contact.appendChild(l);
    return i;
  }
  var nameIn = field("name", "text", "Name", "name");
  var phoneIn = field("phone", "tel", "Phone", "tel");
  var emailIn = field("email", "email", "Email", "email");
  var consentLabel = el("label", { "class": "consent" });
  var consentBox = el("input", { type: "checkbox", name: "consent" });
  var consentWords = el("span");
  consentLabel.appendChild(consentBox);
  consentLabel.appendChild(consentWords);
  contact.appendChild(consentLabel);
  contact.appendChild(el("button", { type: "submit" }, "Send my contact"));
  var callBar = el("div", { "class": "call", hidden: "", role: "group", "aria-label": "Call us" });
  var callBtn = el("button", { "class": "dial", type: "button", "aria-label": "Call us from your browser" }, "Call");
  var hangBtn = el("button", { "class": "hang", type: "button", hidden: "", "aria-label": "Hang up the call" }, "Hang up");
  var callState = el("p", { "class": "call-state", role: "status", "aria-live": "polite" });
  callBar.appendChild(callBtn);
  callBar.appendChild(hangBtn);
  callBar.appendChild(callState);

  panel.appendChild(header);
  panel.appendChild(log);
  panel.appendChild(status);
  panel.appendChild(callBar);
  panel.appendChild(more);
  panel.appendChild(contact);
  panel.appendChild(form);
  root.appendChild(launch);
  root.appendChild(panel);

  function say(words) { status.textContent = words || ""; }

  function addLine(line) {
    if (!line || seen[line.seq]) return;
    seen[line.seq] = true;
    var from = line.from === "visitor" || line.from === "assistant" || line.from === "person" ? line.from : "notice";
    var item = el("div", { "class": "line " + from });
    if (from !== "notice") {
      var who = from === "visitor" ? "You" : from === "person" ? (line.name || "Team") : "Assistant";
      item.appendChild(el("span", { "class": "who" }, who));
    }
    item.appendChild(document.createTextNode(String(line.text || "")));
    log.appendChild(item);
    log.scrollTop = log.scrollHeight;
  }

  function setConsent(text) {
    // No disclosure set: no box (there would be nothing to agree to).
    consentText = text || "";
    consentWords.textContent = consentText;
    consentLabel.hidden = !consentText;
    if (!consentText) consentBox.checked = false;
  }

  // Calls from the browser: shown when the session says `voice: true`.
  var device = null;
  var activeCall = null;
  var sdkLoading = null;
  function setVoice(on) {
    if (!on && !activeCall) callBar.hidden = true;
    if (on) callBar.hidden = false;
  }
  function loadSdk() {
    if (window.Twilio && window.Twilio.Device) return Promise.resolve();
    if (sdkLoading) return sdkLoading;
    sdkLoading = new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = SDK;
      tag.async = true;
      tag.onload = function () {
        if (window.Twilio && window.Twilio.Device) resolve();
        else reject(new Error("The call could not start: the calling software did not load."));
      };
      tag.onerror = function () {
        sdkLoading = null;
        reject(new Error("The call could not start: the calling software did not load."));
      };
      (document.head || document.body).appendChild(tag);
    });
    return sdkLoading;
  }
  function callEnded(words) {
    activeCall = null;
    if (device) { try { device.destroy(); } catch (e) { /* already gone */ } device = null; }
    hangBtn.hidden = true;
    callBtn.hidden = false;
    callBtn.disabled = false;
    callState.textContent = words;
    callBtn.focus();
  }
  function startCall() {
    if (!session || activeCall || callBtn.disabled) return;
    callBtn.disabled = true;
    callState.textContent = "Calling\u2026";
    var path = "/" + encodeURIComponent(session.sessionId) + "/voice-token";
    Promise.all([loadSdk(), request("POST", path, null)]).then(function (done) {
      device = new window.Twilio.Device(done[1].token, { closeProtection: true });
      device.on("error", function (e) { callEnded("The call failed: " + ((e && e.message) || "an error in the call.")); });
      return device.connect();
    }).then(function (call) {
      activeCall = call;
      callBtn.hidden = true;
      hangBtn.hidden = false;
      hangBtn.focus();
      call.on("accept", function () { callState.textContent = "On call"; });
      call.on("disconnect", function () { callEnded("Call ended"); });
      call.on("cancel", function () { callEnded("Call ended"); });
      call.on("reject", function () { callEnded("The call was not answered."); });
      call.on("error", function (e) { callEnded("The call failed: " + ((e && e.message) || "an error in the call.")); });
    }).catch(function (e) {
      var words = e && e.name === "NotAllowedError" ?
        "The call could not start: allow the microphone for this page and try again." :
        (e && e.message) || "The call could not start.";
      callEnded(words);
    });
  }
  function hangUp() {
    if (activeCall) { try { activeCall.disconnect(); } catch (e) { callEnded("Call ended"); } }
    else if (device) { try { device.disconnectAll(); } catch (e) { /* nothing to end */ } callEnded("Call ended"); }
  }
  callBtn.addEventListener("click", startCall);
  hangBtn.addEventListener("click", hangUp);

  function request(method, path, body) {
    var headers = { "Content-Type": "application/json" };
    if (session) headers.Authorization = "Bearer " + session.token;
    return fetch(api + path, { method: method, headers: headers, body: body ? JSON.stringify(body) : undefined, mode: "cors", credentials: "omit" })
      .catch(function () {
        // Refused by the browser (an origin the chat does not allow) or unreachable.
        throw new Error("The chat is not available on this page right now.");
      })
      .then(function (r) {
        return r.text().then(function (t) {
          var json = null;
          try { json = t ? JSON.parse(t) : null; } catch (e) { /* not JSON */ }
          if (!r.ok) {
            var words = json && json.message ? json.message : "The chat is not available right now.";
            var err = new Error(words);
            err.status = r.status;
            throw err;
          }
          return json;
        });
      });
  }

  function connect() {
    if (stream) stream.close();
    var url = api + "/" + encodeURIComponent(session.sessionId) + "/events?token=" + encodeURIComponent(session.token);
    stream = new EventSource(url);
    stream.addEventListener("session", function (e) {
      try {
        var hello = JSON.parse(e.data);
        setConsent(hello.consentText);
        setVoice(hello.voice === true);
      } catch (x) { /* ignore */ }
      restarted = false;
    });
    stream.addEventListener("line", function (e) {
      try { addLine(JSON.parse(e.data)); } catch (x) { /* ignore */ }
    });
    stream.onerror = function () {
      // Closed for good (a token no longer good): one new session, once.
      if (stream.readyState === 2 && !restarted) {
        restarted = true;
        forget();
        start();
      }
    };
  }

  function start() {
    if (session) { connect(); return Promise.resolve(); }
    return request("POST", "", null).then(function (s) {
      session = { sessionId: s.sessionId, token: s.token, at: Date.now() };
      save();
      setConsent(s.consentText);
      setVoice(s.voice === true);
      connect();
    }).catch(function (e) { say(e.message); });
  }

  var started = false;
  function open(show) {
    panel.hidden = !show;
    launch.setAttribute("aria-expanded", show ? "true" : "false");
    if (show) {
      if (!started) { started = true; start(); }
      input.focus();
    } else {
      launch.focus();
    }
  }
  launch.addEventListener("click", function () { open(panel.hidden); });
  close.addEventListener("click", function () { open(false); });
  panel.addEventListener("keydown", function (e) { if (e.key === "Escape") open(false); });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit ? form.requestSubmit() : submit(e); }
  });
  function submit(e) {
    e.preventDefault();
    var text = input.value.trim();
    if (!text) return;
    if (text.length > MAX) { say("A message is at most " + MAX + " characters."); return; }
    if (!session) { say("The chat is starting; try again in a moment."); return; }
    send.disabled = true;
    request("POST", "/" + encodeURIComponent(session.sessionId) + "/messages", { text: text })
      .then(function (line) { input.value = ""; say(""); save(); addLine(line); })
      .catch(function (err) { say(err.message); })
      .then(function () { send.disabled = false; input.focus(); });
  }
  form.addEventListener("submit", submit);
  more.addEventListener("click", function () {
    contact.hidden = !contact.hidden;
    more.setAttribute("aria-expanded", contact.hidden ? "false" : "true");
    if (!contact.hidden) nameIn.focus();
  });
  contact.addEventListener("submit", function (e) {
    e.preventDefault();
    if (!session) return;
    var body = { name: nameIn.value, phone: phoneIn.value, email: emailIn.value, consent: consentBox.checked, pageUrl: location.href };
    request("POST", "/" + encodeURIComponent(session.sessionId) + "/contact", body)
      .then(function (r) { say(""); contact.hidden = true; more.hidden = true; addLine({ seq: "contact", from: "notice", text: (r && r.message) || "Thanks!" }); })
      .catch(function (err) { say(err.message); });
  });

  session = load();
  if (session) { started = true; connect(); }
  function mount() { document.body.appendChild(host); }
  if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount);
})();
