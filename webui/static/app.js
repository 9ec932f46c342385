// orchestrator web UI: a little vanilla JS, no framework, no inline scripts (CSP).
// - Pages of running things poll their JSON API; when the data changes, the page's
//   [data-live] regions are swapped for fresh ones (no full reload, no flicker).
// - Logs of running tries follow their file (new bytes appended, scrolled if at bottom).
// - Forms with data-confirm ask before they post.
(function () {
  "use strict";
  var POLL_MS = 2000;
  var ACTIVE = /"state": ?"(queued|running|scheduled|up_for_retry|up_for_reschedule|deferred)"/;

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
        wireGroups();
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

  // Task groups (issue 14): a group's box in the graph and its header row in the grid
  // open and close on click (or Enter); what is open survives the live refreshes.
  var openGroups = { graph: {}, grid: {} };

  function allOpen(open, path, strict) {
    var parts = path.split(".");
    var n = strict ? parts.length - 1 : parts.length;
    for (var i = 1; i <= n; i++) {
      if (!open[parts.slice(0, i).join(".")]) return false;
    }
    return true;
  }

  function applyGroups() {
    var g = openGroups.graph, r = openGroups.grid;
    document.querySelectorAll("svg.graph .group-box").forEach(function (box) {
      var path = box.getAttribute("data-group");
      var open = !!g[path];
      box.classList.toggle("collapsed", !open);
      box.classList.toggle("expanded", open);
      box.setAttribute("aria-expanded", open ? "true" : "false");
      var mark = box.querySelector(".group-toggle");
      if (mark) mark.textContent = open ? "\u25BE" : "\u25B8";
      box.classList.toggle("hidden-in-group", !allOpen(g, path, true));
    });
    document.querySelectorAll("svg.graph .node[data-group]").forEach(function (node) {
      node.classList.toggle("hidden-in-group", !allOpen(g, node.getAttribute("data-group"), false));
    });
    document.querySelectorAll(".grid tr.group-row").forEach(function (row) {
      var path = row.getAttribute("data-group");
      var open = !!r[path];
      row.classList.toggle("collapsed", !open);
      row.classList.toggle("expanded", open);
      var th = row.querySelector("th");
      if (th) th.setAttribute("aria-expanded", open ? "true" : "false");
      var rowMark = row.querySelector(".group-toggle");
      if (rowMark) rowMark.textContent = open ? "\u25BE" : "\u25B8";
      row.classList.toggle("hidden-in-group", !allOpen(r, path, true));
    });
    document.querySelectorAll(".grid tr.group-member").forEach(function (row) {
      row.classList.toggle("hidden-in-group", !allOpen(r, row.getAttribute("data-group"), false));
    });
  }

  function wireGroups() {
    function wire(el, open, path) {
      if (el.getAttribute("data-wired")) return;
      el.setAttribute("data-wired", "1");
      function toggle(ev) {
        ev.preventDefault();
        open[path] = !open[path];
        applyGroups();
      }
      el.addEventListener("click", toggle);
      el.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") toggle(ev);
      });
    }
    document.querySelectorAll("svg.graph .group-box").forEach(function (box) {
      wire(box, openGroups.graph, box.getAttribute("data-group"));
    });
    document.querySelectorAll(".grid tr.group-row > th").forEach(function (th) {
      wire(th, openGroups.grid, th.parentNode.getAttribute("data-group"));
    });
    applyGroups();
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

  // The trigger form's JSON editors (issue 25): a param of type object or array is
  // edited as JSON, checked as you type (the form will not post invalid JSON) and
  // pretty-printed when the field loses focus.
  function wireJsonEditors() {
    document.querySelectorAll("textarea[data-json-editor]").forEach(function (area) {
      if (area.getAttribute("data-wired")) return;
      area.setAttribute("data-wired", "1");
      var status = area.parentNode.querySelector(".json-status");
      function check() {
        var message = "";
        if (area.value.trim() !== "" || area.required) {
          try {
            JSON.parse(area.value);
          } catch (e) {
            message = "not valid JSON: " + e.message;
          }
        }
        area.setCustomValidity(message);
        area.classList.toggle("invalid", message !== "");
        if (status) status.textContent = message || "valid JSON";
        return message === "";
      }
      area.addEventListener("input", check);
      area.addEventListener("blur", function () {
        if (check() && area.value.trim() !== "") {
          area.value = JSON.stringify(JSON.parse(area.value), null, 1);
        }
      });
      check();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    wireJsonEditors();
    wireConfirms();
    wireGroups();
    followLogs();
    poll();
  });
})();
