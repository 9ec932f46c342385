// orchestrator web UI: a little vanilla JS, no framework, no inline scripts (CSP).
// - Pages of running things poll their JSON API; when the data changes, the page's
//   [data-live] regions are swapped for fresh ones (no full reload, no flicker).
// - Logs of running tries follow their file (new bytes appended, scrolled if at bottom).
// - Forms with data-confirm ask before they post.
(function () {
  "use strict";
  var POLL_MS = 2000;
  var ACTIVE = /"state": ?"(queued|running|scheduled|up_for_retry|up_for_reschedule)"/;

  function poll() {
    var url = document.body.getAttribute("data-poll");
    if (!url) return;
    var last = null;
    function tick() {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (text) {
          if (text === null) return;
          if (last !== null && text !== last) refreshLive();
          last = text;
          if (ACTIVE.test(text)) setTimeout(tick, POLL_MS);
          else setTimeout(tick, POLL_MS * 5);
        })
        .catch(function () { setTimeout(tick, POLL_MS * 5); });
    }
    tick();
  }

  function refreshLive() {
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (old) {
          var fresh = doc.getElementById(old.id);
          if (fresh) old.replaceWith(document.importNode(fresh, true));
        });
        wireConfirms();
        // a try that just started gets a log section: take it over
        document.querySelectorAll(".log-section").forEach(function (old) {
          var fresh = doc.getElementById(old.id);
          var pre = old.querySelector("pre.log");
          if (fresh && (!pre || pre.getAttribute("data-running") !== "1")) {
            old.replaceWith(document.importNode(fresh, true));
          }
        });
        followLogs();
      });
  }

  function followLog(pre) {
    if (pre.getAttribute("data-following") === "1") return;
    pre.setAttribute("data-following", "1");
    function tick() {
      if (pre.getAttribute("data-running") !== "1" || !pre.isConnected) return;
      var url = pre.getAttribute("data-log-url") + "?offset=" + pre.getAttribute("data-offset");
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (chunk) {
          if (!chunk) return;
          var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
          if (chunk.text) pre.appendChild(document.createTextNode(chunk.text));
          pre.setAttribute("data-offset", String(chunk.next_offset));
          if (atBottom) pre.scrollTop = pre.scrollHeight;
          if (chunk.finished && !chunk.text) pre.setAttribute("data-running", "0");
          setTimeout(tick, 1500);
        })
        .catch(function () { setTimeout(tick, 5000); });
    }
    pre.scrollTop = pre.scrollHeight;
    setTimeout(tick, 1500);
  }

  function followLogs() {
    document.querySelectorAll("pre.log[data-running='1']").forEach(followLog);
  }

  function wireConfirms() {
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      if (form.getAttribute("data-wired")) return;
      form.setAttribute("data-wired", "1");
      form.addEventListener("submit", function (ev) {
        if (!window.confirm(form.getAttribute("data-confirm"))) ev.preventDefault();
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    wireConfirms();
    followLogs();
    poll();
  });
})();
