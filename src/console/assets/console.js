// engaged console: small conveniences on pages that work without this script.
// - Live: a page with [data-live] regions listens to /console/events (Server-Sent
//   Events) and, when its organization's leads change, fetches itself again and swaps
//   those regions and the title in place ("(3) Inbox").
// - Keyboard: j / k move between conversations, Enter opens one, r focuses the reply
//   box, / the search field.
// - Browser notifications while the console is open, once the person allows them.
// - A form asking for confirmation (data-confirm) asks before it is sent.
// - Leads' folded filters open on a desktop's width.
// - An SMS text box counts its segments as the text changes.
(function () {
  "use strict";

  // Leads: the filters folded under "More filters" open by themselves on a desktop's
  // width (without this script, one click opens them).
  if (window.matchMedia && window.matchMedia("(min-width: 48rem)").matches) {
    document.querySelectorAll("details.more-filters").forEach(function (d) { d.open = true; });
  }

  function typing(target) {
    return target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" ||
      target.tagName === "SELECT" || target.isContentEditable);
  }

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("tr[data-row]")); }

  function move(step) {
    var all = rows();
    if (!all.length) { return; }
    var at = all.findIndex(function (row) { return row.classList.contains("current"); });
    var next = Math.max(0, Math.min(all.length - 1, at < 0 ? 0 : at + step));
    all.forEach(function (row) { row.classList.remove("current"); });
    all[next].classList.add("current");
    var link = all[next].querySelector("a");
    if (link) { link.focus(); }
  }

  document.addEventListener("keydown", function (event) {
    if (typing(event.target) || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var field = null;
    if (event.key === "/") {
      field = document.querySelector("input[name=q]");
    } else if (event.key === "r") {
      field = document.querySelector("textarea[name=message]");
    } else if (event.key === "j") {
      event.preventDefault(); move(1); return;
    } else if (event.key === "k") {
      event.preventDefault(); move(-1); return;
    } else if (event.key === "Enter") {
      var current = document.querySelector("tr[data-row].current a");
      if (current && document.activeElement !== current) { event.preventDefault(); current.click(); }
      return;
    }
    if (field) { event.preventDefault(); field.focus(); }
  });

  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });

  var live = document.querySelectorAll("[data-live]");
  if (!live.length || !window.EventSource || !window.fetch) { return; }

  function attention(root) {
    var inbox = root.querySelector("[data-attention]");
    return inbox ? parseInt(inbox.getAttribute("data-attention"), 10) || 0 : null;
  }

  var known = attention(document);
  var notice = null;
  function say(text) {
    if (!notice) {
      notice = document.createElement("p");
      notice.className = "notice";
      notice.setAttribute("role", "status");
      document.querySelector("main").prepend(notice);
    }
    notice.textContent = text;
  }

  if (known !== null && window.Notification && Notification.permission === "default") {
    var ask = document.createElement("button");
    ask.type = "button";
    ask.className = "secondary";
    ask.textContent = "Turn on browser notifications";
    ask.addEventListener("click", function () {
      Notification.requestPermission().then(function () { ask.remove(); });
    });
    document.querySelector("main h1").after(ask);
  }

  var pending = null;
  function refresh() {
    pending = null;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (answer) { return answer.ok ? answer.text() : Promise.reject(answer.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (region) {
          var next = region.id && fresh.getElementById(region.id);
          if (next) { region.replaceWith(document.importNode(next, true)); }
        });
        document.title = fresh.title;
        var now = attention(fresh);
        if (known !== null && now !== null && now > known && window.Notification &&
            Notification.permission === "granted") {
          new Notification("engaged", { body: now + " conversation(s) need attention" });
        }
        known = now;
      })
      .catch(function () { say("Live updates paused: reload the page."); });
  }

  var source = new EventSource("/console/events");
  // A change names the leads that changed (an empty list: any may have; absent: none
  // did) and the web chats that did. A lead's page waits for its lead, a web chat's
  // page for its chat, the web chats' list for any chat or lead, other pages for leads.
  function wanted(data) {
    var leads = Array.isArray(data.leads) ? data.leads : null;
    var chats = Array.isArray(data.webchats) ? data.webchats : [];
    var chat = document.querySelector("[data-webchat]");
    if (chat) { return chats.indexOf(chat.getAttribute("data-webchat")) >= 0; }
    if (document.querySelector("[data-webchats]")) { return true; }
    if (leads === null) { return false; }
    var lead = document.querySelector("[data-lead]");
    return !lead || !leads.length || leads.indexOf(lead.getAttribute("data-lead")) >= 0;
  }
  source.addEventListener("change", function (event) {
    var data = { leads: [] };
    try { data = JSON.parse(event.data) || data; } catch (e) { data = { leads: [] }; }
    if (!wanted(data)) { return; }
    if (!pending) { pending = window.setTimeout(refresh, 100); }
  });
  source.addEventListener("reload", function () {
    source.close();
    say("This page fell behind: reload it to see the latest.");
  });
  source.addEventListener("signed-out", function () {
    source.close();
    window.location.href = "/console/login";
  });
})();

// An empty time zone field starts with the browser's zone, to keep or change.
(function () {
  var zone = document.getElementById("time-zone");
  if (!zone || zone.value || !window.Intl) { return; }
  try { zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone.value = ""; }
})();

// An SMS's length in segments beside its text box ([data-sms-count]), as phones count
// them (`sms_segments.rs`): GSM-7 when every character is in its alphabets (160 alone,
// 153 a part; an extension character takes two), else UCS-2 (70 alone, 67 a part).
(function () {
  var BASIC = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
  var EXTENSION = "^{}\\[~]|€\f";
  function count(text) {
    var septets = 0, gsm = true, units = 0;
    Array.from(text).forEach(function (c) {
      units += c.length;
      if (BASIC.indexOf(c) >= 0) { septets += 1; } else if (EXTENSION.indexOf(c) >= 0) { septets += 2; } else { gsm = false; }
    });
    var n = gsm ? septets : units, single = gsm ? 160 : 70, part = gsm ? 153 : 67;
    return n === 0 ? 0 : (n <= single ? 1 : Math.ceil(n / part));
  }
  function words(box) {
    var n = count(box.value), max = Number(box.getAttribute("data-sms-count"));
    var text = n === 1 ? "1 SMS segment" : n + " SMS segments";
    return n > max ? text + ": too long, at most " + max : text;
  }
  Array.prototype.forEach.call(document.querySelectorAll("[data-sms-count]"), function (box) {
    var out = document.getElementById(box.id + "-segments");
    if (!out) { return; }
    box.addEventListener("input", function () { out.textContent = words(box); });
  });
})();
