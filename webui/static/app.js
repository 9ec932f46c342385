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
          if (!fresh) return;
          var node = document.importNode(fresh, true);
          keepChecks(old, node);
          old.replaceWith(node);
        });
        wireConfirms();
        wireGroups();
        if (window.orchestratorGraphView) window.orchestratorGraphView.wire();
        wireGantt();
        wireGridFilters();
        refreshLogs(doc);
      });
  }

  // The Gantt chart (issue 27): a mapped task's row unfolds into one row per instance,
  // a task group's header row folds its tasks away; the visible rows are laid out
  // again (each row is a <g> placed by its transform). Survives the live refreshes.
  var ganttState = { unfolded: {}, folded: {} };

  function ganttKind(row) {  // its class: gantt-task, gantt-group, gantt-mapped, gantt-instance
    var kinds = ["instance", "mapped", "group"];
    for (var i = 0; i < kinds.length; i++) if (row.classList.contains("gantt-" + kinds[i])) return kinds[i];
    return "task";
  }

  function layoutGantt(svg) {
    var rowH = Number(svg.getAttribute("data-row-h")), y = Number(svg.getAttribute("data-axis-h"));
    svg.querySelectorAll("g.gantt-row").forEach(function (row) {
      var id = row.getAttribute("data-task-id"), kind = ganttKind(row);
      var within = (row.getAttribute("data-in") || "").split(" ").filter(Boolean);
      var shown = within.every(function (path) {
        return kind === "instance" ? ganttState.unfolded[path] : !ganttState.folded[path];
      });
      if (kind === "instance" && shown) {  // and its task's row is not folded away
        var task = svg.querySelector("g.gantt-mapped[data-task-id='" + CSS.escape(within[0]) + "']");
        shown = !!task && task.getAttribute("display") !== "none";
      }
      if (shown) {
        row.removeAttribute("display");
        row.setAttribute("transform", "translate(0," + y + ")");
        y += rowH;
      } else {
        row.setAttribute("display", "none");
      }
      var toggle = row.querySelector(".gantt-toggle");
      if (toggle) {
        var open = kind === "mapped" ? !!ganttState.unfolded[id] : !ganttState.folded[id];
        toggle.setAttribute("aria-expanded", open ? "true" : "false");
        var caret = toggle.querySelector(".caret");
        if (caret) caret.textContent = open ? "\u25BE" : "\u25B8";
      }
    });
    var height = y + Number(svg.getAttribute("data-clock-h")) + 4;
    var box = svg.getAttribute("viewBox").split(" ");
    svg.setAttribute("viewBox", "0 0 " + box[2] + " " + height);
    svg.setAttribute("height", String(height));
    var clock = svg.querySelector("g.gantt-clock");
    if (clock) clock.setAttribute("transform", "translate(0," + (height - Number(svg.getAttribute("data-clock-h")) - 4) + ")");
  }

  function wireGantt() {
    document.querySelectorAll("svg.gantt").forEach(function (svg) {
      svg.querySelectorAll(".gantt-toggle").forEach(function (toggle) {
        if (toggle.getAttribute("data-wired")) return;
        toggle.setAttribute("data-wired", "1");
        var row = toggle.closest("g.gantt-row");
        var id = row.getAttribute("data-task-id");
        var which = ganttKind(row) === "mapped" ? ganttState.unfolded : ganttState.folded;
        function flip(ev) {
          ev.preventDefault();
          which[id] = !which[id];
          layoutGantt(svg);
        }
        toggle.addEventListener("click", flip);
        toggle.addEventListener("keydown", function (ev) {
          if (ev.key === "Enter" || ev.key === " ") flip(ev);
        });
      });
      layoutGantt(svg);
    });
  }

  // Task groups (issue 14): a group's header row in the grid opens and closes on click
  // (or Enter); what is open survives the live refreshes. (The graph's groups: issue 27,
  // static/graph_view.js.)
  var openGroups = { grid: {} };

  function allOpen(open, path, strict) {
    var parts = path.split(".");
    var n = strict ? parts.length - 1 : parts.length;
    for (var i = 1; i <= n; i++) {
      if (!open[parts.slice(0, i).join(".")]) return false;
    }
    return true;
  }

  function applyGroups() {
    // the graph's groups open and close on the server (static/graph_view.js)
    var r = openGroups.grid;
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
    document.querySelectorAll(".grid tr.group-row > th").forEach(function (th) {
      wire(th, openGroups.grid, th.parentNode.getAttribute("data-group"));
    });
    applyGroups();
  }

  // The log viewer (issue 27): one tab per try, search with highlighted matches (plain
  // text, never a pattern), a level filter, a wrap toggle, earlier pages on demand, and
  // the running try followed (polled) until it ends. Lines come rendered (numbered,
  // levelled, ANSI colours as classes, text escaped) by the server (webui/log_view.py).
  function logUrl(pre, params) {
    var q = Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    });
    return pre.getAttribute("data-log-url") + "?" + q.join("&");
  }

  function followLog(pre) {
    if (pre.getAttribute("data-following") === "1") return;
    pre.setAttribute("data-following", "1");
    function stop() {
      pre.setAttribute("data-running", "0");
      var section = pre.closest(".log-section");
      var mark = section && section.querySelector(".following");
      if (mark) mark.remove();
    }
    function tick() {
      if (pre.getAttribute("data-running") !== "1" || !pre.isConnected) return;
      var url = logUrl(pre, {
        format: "html",
        offset: pre.getAttribute("data-offset"),
        line: pre.getAttribute("data-next-line")
      });
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (chunk) {
          if (!chunk || chunk.missing) { setTimeout(tick, 3000); return; }
          var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
          if (chunk.html) {
            pre.insertAdjacentHTML("beforeend", chunk.html);
            if (logState.query) highlight(pre, logState.query);
          }
          pre.setAttribute("data-offset", String(chunk.next_offset));
          pre.setAttribute("data-next-line", String(chunk.next_line));
          if (atBottom) pre.scrollTop = pre.scrollHeight;
          if (chunk.finished && chunk.next_offset === chunk.offset) stop();
          else setTimeout(tick, 1500);
        })
        .catch(function () { setTimeout(tick, 5000); });
    }
    pre.scrollTop = pre.scrollHeight;
    setTimeout(tick, 1500);
  }

  function followLogs() {
    document.querySelectorAll("pre.log[data-running='1']").forEach(followLog);
  }

  var logState = { query: "", current: -1, selected: null };

  function clearHighlights(pre) {
    var marks = pre.querySelectorAll("mark.hit");
    if (!marks.length) return;
    marks.forEach(function (m) { m.replaceWith(document.createTextNode(m.textContent)); });
    pre.querySelectorAll(".log-line.has-hit").forEach(function (l) { l.classList.remove("has-hit"); });
    pre.normalize();
  }

  // Marks every occurrence of ``query`` (case-insensitive, plain text) in the line texts.
  function highlight(pre, query) {
    clearHighlights(pre);
    if (!query) return 0;
    var needle = query.toLowerCase();
    var walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    var nodes = [];
    while (walker.nextNode()) {
      var node = walker.currentNode;
      if (node.parentNode.closest(".lt") && node.data.toLowerCase().indexOf(needle) >= 0) nodes.push(node);
    }
    var count = 0;
    nodes.forEach(function (node) {
      var text = node.data, lower = text.toLowerCase(), at = 0, i;
      var frag = document.createDocumentFragment();
      while ((i = lower.indexOf(needle, at)) >= 0) {
        frag.appendChild(document.createTextNode(text.slice(at, i)));
        var mark = document.createElement("mark");
        mark.className = "hit";
        mark.textContent = text.slice(i, i + needle.length);
        frag.appendChild(mark);
        at = i + needle.length;
        count++;
      }
      frag.appendChild(document.createTextNode(text.slice(at)));
      var line = node.parentNode.closest(".log-line");
      if (line) line.classList.add("has-hit");
      node.replaceWith(frag);
    });
    return count;
  }

  function activePre(root) {
    var section = root.querySelector(".log-section:not([hidden])");
    return section ? section.querySelector("pre.log") : null;
  }

  function runSearch(root) {
    var pre = activePre(root);
    var hits = root.querySelector(".log-hits");
    root.querySelectorAll("pre.log").forEach(function (p) { if (p !== pre) clearHighlights(p); });
    logState.current = -1;
    var all = root.querySelector(".log-section:not([hidden]) .log-search-all");
    if (all) all.hidden = !logState.query;
    if (!pre) { hits.textContent = ""; return; }
    var n = highlight(pre, logState.query);
    hits.textContent = !logState.query ? "" : n === 0 ? "no match in the lines shown"
      : n === 1 ? "1 match" : n + " matches";
    if (n) step(root, 1);
  }

  function step(root, by) {
    var pre = activePre(root);
    if (!pre) return;
    var marks = Array.prototype.filter.call(pre.querySelectorAll("mark.hit"), function (m) {
      return m.getClientRects().length > 0;  // not on a line the level filter hides
    });
    if (!marks.length) return;
    pre.querySelectorAll("mark.hit.current").forEach(function (m) { m.classList.remove("current"); });
    logState.current = (logState.current + by + marks.length) % marks.length;
    var mark = marks[logState.current];
    mark.classList.add("current");
    mark.scrollIntoView({ block: "nearest" });
    var hits = root.querySelector(".log-hits");
    hits.textContent = (logState.current + 1) + " of " + marks.length + (marks.length === 1 ? " match" : " matches");
  }

  function selectTry(root, number) {
    var found = false;
    root.querySelectorAll(".log-section").forEach(function (section) {
      var on = section.getAttribute("data-try") === String(number);
      section.hidden = !on;
      found = found || on;
    });
    if (!found) return false;
    root.querySelectorAll(".log-tab").forEach(function (tab) {
      tab.setAttribute("aria-selected", tab.getAttribute("data-try") === String(number) ? "true" : "false");
    });
    logState.selected = String(number);
    runSearch(root);
    var pre = activePre(root);
    if (pre && pre.getAttribute("data-scrolled") !== "1") {
      pre.setAttribute("data-scrolled", "1");
      pre.scrollTop = pre.scrollHeight;
    }
    return true;
  }

  function loadEarlier(root, section, button) {
    var pre = section.querySelector("pre.log");
    button.disabled = true;
    fetch(logUrl(pre, { format: "html", before: pre.getAttribute("data-start"), line: pre.getAttribute("data-first-line") }),
      { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (chunk) {
        button.disabled = false;
        if (!chunk || chunk.missing) return;
        var height = pre.scrollHeight;
        pre.insertAdjacentHTML("afterbegin", chunk.html);
        pre.scrollTop += pre.scrollHeight - height;
        pre.setAttribute("data-start", String(chunk.offset));
        pre.setAttribute("data-first-line", String(chunk.first_line));
        if (chunk.offset === 0) button.parentNode.querySelector(".log-load-earlier").remove();
        if (logState.query) runSearch(root);
      })
      .catch(function () { button.disabled = false; });
  }

  function searchAll(section) {
    var pre = section.querySelector("pre.log");
    var list = section.querySelector(".log-results");
    fetch(logUrl(pre, { q: logState.query }), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (found) {
        if (!found) return;
        list.textContent = "";
        found.matches.forEach(function (m) {
          var item = document.createElement("li");
          item.value = m.line;
          item.textContent = m.text;
          list.appendChild(item);
        });
        if (!found.matches.length) {
          var none = document.createElement("li");
          none.className = "muted";
          none.textContent = "no line of the whole log holds it";
          list.appendChild(none);
        }
        if (found.truncated) {
          var more = document.createElement("li");
          more.className = "muted";
          more.textContent = "… the first " + found.matches.length + " matching lines only";
          list.appendChild(more);
        }
        list.hidden = false;
      });
  }

  function wireLogs() {
    var root = document.getElementById("logs");
    if (!root || root.getAttribute("data-wired")) return;
    root.setAttribute("data-wired", "1");
    var toolbar = root.querySelector(".log-toolbar");
    if (!toolbar) return;
    toolbar.hidden = false;
    var search = toolbar.querySelector(".log-search");
    var level = toolbar.querySelector(".log-level");
    var wrap = toolbar.querySelector(".log-wrap");
    search.value = logState.query;
    if (logState.level) level.value = logState.level;
    if (logState.nowrap) wrap.checked = false;
    root.setAttribute("data-min-level", level.value);
    root.classList.toggle("nowrap", !wrap.checked);
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { logState.query = search.value; runSearch(root); }, 120);
    });
    search.addEventListener("keydown", function (ev) {
      if (ev.key !== "Enter") return;
      ev.preventDefault();
      clearTimeout(timer);
      if (logState.query !== search.value) { logState.query = search.value; runSearch(root); }
      else step(root, ev.shiftKey ? -1 : 1);
    });
    toolbar.querySelector(".log-next").addEventListener("click", function () { step(root, 1); });
    toolbar.querySelector(".log-prev").addEventListener("click", function () { step(root, -1); });
    level.addEventListener("change", function () {
      logState.level = level.value;
      root.setAttribute("data-min-level", level.value);
    });
    wrap.addEventListener("change", function () {
      logState.nowrap = !wrap.checked;
      root.classList.toggle("nowrap", !wrap.checked);
    });
    root.querySelectorAll(".log-tab").forEach(function (tab) {
      tab.addEventListener("click", function () { selectTry(root, tab.getAttribute("data-try")); });
    });
    root.querySelectorAll(".log-section").forEach(function (section) {
      var earlier = section.querySelector(".log-load-earlier");
      if (earlier) earlier.addEventListener("click", function () { loadEarlier(root, section, earlier); });
      var all = section.querySelector(".log-search-all");
      if (all) all.addEventListener("click", function () { searchAll(section); });
    });
    var fromHash = /^#try-(\d+)$/.exec(window.location.hash);
    var tabs = root.querySelectorAll(".log-tab");
    if (!(fromHash && selectTry(root, fromHash[1])) && !(logState.selected && selectTry(root, logState.selected))) {
      if (tabs.length) selectTry(root, tabs[tabs.length - 1].getAttribute("data-try"));
    }
  }

  // A live refresh brings a new try (a new tab) or the log of a try that had none yet;
  // a log being followed, and what the reader did to the others, stay as they are.
  function refreshLogs(doc) {
    var old = document.getElementById("logs"), fresh = doc.getElementById("logs");
    if (!old || !fresh) return;
    if (old.getAttribute("data-tries") !== fresh.getAttribute("data-tries")) {
      logState.selected = null;  // a new try: show it
      old.replaceWith(document.importNode(fresh, true));
      wireLogs();
      followLogs();
      return;
    }
    var tabs = old.querySelector(".log-tabs"), freshTabs = fresh.querySelector(".log-tabs");
    if (tabs && freshTabs) {
      old.querySelectorAll(".log-tab").forEach(function (tab) {
        var other = freshTabs.querySelector(".log-tab[data-try='" + tab.getAttribute("data-try") + "'] .pill");
        var pill = tab.querySelector(".pill");
        if (other && pill) pill.replaceWith(document.importNode(other, true));
      });
    }
    old.querySelectorAll(".log-section").forEach(function (section) {
      var other = doc.getElementById(section.id);
      var facts = section.querySelector(".try-facts"), freshFacts = other && other.querySelector(".try-facts");
      if (facts && freshFacts && facts.innerHTML !== freshFacts.innerHTML) {  // the try ended
        facts.replaceWith(document.importNode(freshFacts, true));
      }
      if (other && !section.querySelector("pre.log") && other.querySelector("pre.log")) {
        var node = document.importNode(other, true);
        node.hidden = section.hidden;
        section.replaceWith(node);
        old.removeAttribute("data-wired");
        var earlier = node.querySelector(".log-load-earlier");
        if (earlier) earlier.addEventListener("click", function () { loadEarlier(old, node, earlier); });
        var all = node.querySelector(".log-search-all");
        if (all) all.addEventListener("click", function () { searchAll(node); });
        old.setAttribute("data-wired", "1");
      }
    });
    followLogs();
  }

  window.addEventListener("hashchange", function () {
    var root = document.getElementById("logs");
    var m = /^#try-(\d+)$/.exec(window.location.hash);
    if (root && m) selectTry(root, m[1]);
  });

  // A live region's checked boxes (the DAG list's bulk selection) stay checked when
  // it is swapped for a fresh copy.
  function keepChecks(old, fresh) {
    old.querySelectorAll("input[type=checkbox]:checked").forEach(function (box) {
      var sel = "input[type=checkbox][name='" + box.name + "']";
      fresh.querySelectorAll(sel).forEach(function (other) {
        if (other.value === box.value) other.checked = true;
      });
    });
    wireCheckAll();
  }

  // The DAG list's "check every DAG shown" box.
  function wireCheckAll() {
    document.querySelectorAll("input.check-all").forEach(function (all) {
      if (all.getAttribute("data-wired")) return;
      all.setAttribute("data-wired", "1");
      all.addEventListener("change", function () {
        document.querySelectorAll("input[type=checkbox][name=dag_id]").forEach(function (b) {
          b.checked = all.checked;
        });
      });
    });
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

  // a <select data-autosubmit> submits its form when changed (the lineage graph's focus)
  function wireAutoSubmit() {
    document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () {
        select.form.submit();
      });
    });
  }

  // the calendar (issue 27 item 8): a day's button shows its runs below the year
  function wireCalendar() {
    var out = document.querySelector(".calendar-day");
    if (!out) return;
    document.querySelectorAll(".calendar button.day").forEach(function (button) {
      button.addEventListener("click", function () {
        document.querySelectorAll(".calendar button.day.chosen").forEach(function (b) {
          b.classList.remove("chosen");
        });
        button.classList.add("chosen");
        out.textContent = button.getAttribute("data-text");
      });
    });
  }

  // The grid's filters (issue 27): a choice applies at once (the button stays, for
  // keyboards and for pages without scripts).
  function wireGridFilters() {
    document.querySelectorAll("form.grid-filters select:not([data-wired])").forEach(function (select) {
      select.setAttribute("data-wired", "1");
      select.addEventListener("change", function () { select.form.submit(); });
    });
  }

  // The grid's keyboard (issue 27): the arrow keys move between cells (a row's cells
  // are its runs; up and down skip rows folded away), Enter opens the focused one. One
  // listener on the document, so live refreshes need no re-wiring.
  document.addEventListener("keydown", function (ev) {
    var cell = ev.target;
    if (!cell.matches || !cell.matches("table.grid a.cell")) return;
    var td = cell.closest("td"), tr = td.parentNode, column = Array.prototype.indexOf.call(tr.children, td);
    var target = null;
    if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
      var step = ev.key === "ArrowLeft" ? -1 : 1;
      for (var i = column + step; i > 0 && i < tr.children.length && !target; i += step) {
        target = tr.children[i].querySelector("a.cell");
      }
    } else if (ev.key === "ArrowUp" || ev.key === "ArrowDown") {
      var row = ev.key === "ArrowUp" ? tr.previousElementSibling : tr.nextElementSibling;
      while (row && !target) {
        if (row.offsetParent !== null && row.children[column]) target = row.children[column].querySelector("a.cell");
        row = ev.key === "ArrowUp" ? row.previousElementSibling : row.nextElementSibling;
      }
    } else {
      return;
    }
    ev.preventDefault();
    if (target) target.focus();
  });

  document.addEventListener("DOMContentLoaded", function () {
    wireAutoSubmit();
    wireCalendar();
    wireGridFilters();
    wireJsonEditors();
    wireConfirms();
    wireCheckAll();
    wireGroups();
    wireGantt();
    wireLogs();
    followLogs();
    poll();
  });
})();
