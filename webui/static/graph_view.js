// Pan, zoom, fit and a minimap for the task graph (issue 27 item 1).
//
// The server draws the whole graph as one SVG (webui/render.py); here the SVG becomes a
// window onto it: its viewBox is what is shown. The wheel zooms around the pointer, a
// drag pans (a click that did not move still follows the node's link), the buttons zoom,
// fit the whole graph, or show it at its natural size (1:1). A graph of more than 50
// nodes gets a minimap: the whole graph small, with the shown part outlined; a click or
// a drag there moves the view. What is shown survives the page's live refreshes.
(function () {
  "use strict";

  var MINIMAP_NODES = 50;
  var STEP = 1.25; // one zoom step (a button, a wheel notch)
  var views = {}; // card index -> the viewBox shown, kept across live refreshes

  function box(text) {
    return text.split(/[\s,]+/).map(Number);
  }

  function clamp(v, lo, hi) {
    return Math.max(lo, Math.min(hi, v));
  }

  function wire() {
    document.querySelectorAll(".graph-card").forEach(function (card, index) {
      var svg = card.querySelector("svg.graph");
      if (!svg || svg.getAttribute("data-view-wired")) return;
      svg.setAttribute("data-view-wired", "1");
      var full = box(svg.getAttribute("viewBox"));
      var nodes = svg.querySelectorAll("g.node").length;
      var height = clamp(full[3] + 8, 120, Math.max(window.innerHeight * 0.7, 240));
      svg.setAttribute("width", "100%");
      svg.setAttribute("height", String(Math.round(height)));
      svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
      svg.setAttribute("data-full", full.join(" "));
      svg.classList.add("pannable");
      card.classList.add("graph-view");

      function shown() {
        return box(svg.getAttribute("viewBox"));
      }
      function natural() {
        // the graph at its drawn size: one SVG unit per pixel of the card
        var w = svg.clientWidth || full[2];
        var h = svg.clientHeight || height;
        return [full[0], full[1], w, h];
      }
      function show(v) {
        var minW = 40;
        var maxW = Math.max(full[2], full[3]) * 4 + 400;
        var w = clamp(v[2], minW, maxW);
        var h = v[3] * (w / v[2]);
        svg.setAttribute("viewBox", [v[0], v[1], w, h].map(function (n) {
          return Math.round(n * 100) / 100;
        }).join(" "));
        views[index] = svg.getAttribute("viewBox");
        if (mini) drawMini();
      }
      function zoomAt(factor, fx, fy) {
        // fx, fy: the point kept still, as fractions of the shown width and height
        var v = shown();
        var w = v[2] / factor;
        var h = v[3] / factor;
        show([v[0] + (v[2] - w) * fx, v[1] + (v[3] - h) * fy, w, h]);
      }
      function fit() {
        var w = svg.clientWidth || full[2];
        var h = svg.clientHeight || height;
        var scale = Math.max(full[2] / w, full[3] / h);
        show([full[0], full[1], w * scale, h * scale]);
      }

      // toolbar
      var bar = document.createElement("div");
      bar.className = "graph-toolbar";
      [["+", "Zoom in", function () { zoomAt(STEP, 0.5, 0.5); }],
       ["−", "Zoom out", function () { zoomAt(1 / STEP, 0.5, 0.5); }],
       ["Fit", "Fit the whole graph", fit],
       ["1:1", "Natural size", function () { show(natural()); }]].forEach(function (b) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "btn graph-" + (b[0] === "+" ? "zoom-in" : b[0] === "−" ? "zoom-out"
          : b[0] === "Fit" ? "fit" : "natural");
        button.textContent = b[0];
        button.title = b[1];
        button.setAttribute("aria-label", b[1]);
        button.addEventListener("click", b[2]);
        bar.appendChild(button);
      });
      card.insertBefore(bar, card.firstChild);

      // wheel: zoom around the pointer
      svg.addEventListener("wheel", function (ev) {
        ev.preventDefault();
        var r = svg.getBoundingClientRect();
        var factor = ev.deltaY < 0 ? STEP : 1 / STEP;
        zoomAt(factor, (ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height);
      }, { passive: false });

      // drag: pan; a click that did not move follows its link
      var drag = null;
      var moved = false;
      svg.addEventListener("pointerdown", function (ev) {
        if (ev.button !== 0) return;
        drag = { x: ev.clientX, y: ev.clientY, v: shown() };
        moved = false;
      });
      window.addEventListener("pointermove", function (ev) {
        if (!drag) return;
        var dx = ev.clientX - drag.x;
        var dy = ev.clientY - drag.y;
        if (!moved && Math.abs(dx) + Math.abs(dy) < 4) return;
        moved = true;
        svg.classList.add("panning");
        var r = svg.getBoundingClientRect();
        var per = drag.v[2] / r.width; // SVG units per pixel
        show([drag.v[0] - dx * per, drag.v[1] - dy * per, drag.v[2], drag.v[3]]);
      });
      window.addEventListener("pointerup", function () {
        drag = null;
        svg.classList.remove("panning");
      });
      svg.addEventListener("click", function (ev) {
        if (moved) {
          ev.preventDefault();
          ev.stopPropagation();
          moved = false;
        }
      }, true);

      // the minimap of a large graph
      var mini = null;
      var frame = null;
      function drawMini() {
        var v = shown();
        frame.setAttribute("x", v[0]);
        frame.setAttribute("y", v[1]);
        frame.setAttribute("width", v[2]);
        frame.setAttribute("height", v[3]);
      }
      if (nodes > MINIMAP_NODES) {
        var ns = "http://www.w3.org/2000/svg";
        mini = document.createElementNS(ns, "svg");
        mini.setAttribute("class", "graph-minimap");
        mini.setAttribute("viewBox", full.join(" "));
        mini.setAttribute("preserveAspectRatio", "xMidYMid meet");
        svg.querySelectorAll("g.node rect:first-of-type").forEach(function (r) {
          var m = document.createElementNS(ns, "rect");
          ["x", "y", "width", "height"].forEach(function (a) { m.setAttribute(a, r.getAttribute(a)); });
          var g = r.closest("g.node");
          m.setAttribute("class", "mini-node " + (g.getAttribute("class") || "").replace("node", ""));
          mini.appendChild(m);
        });
        frame = document.createElementNS(ns, "rect");
        frame.setAttribute("class", "minimap-view");
        mini.appendChild(frame);
        card.appendChild(mini);
        function centre(ev) {
          var r = mini.getBoundingClientRect();
          var scale = Math.max(full[2] / r.width, full[3] / r.height);
          var offX = (r.width * scale - full[2]) / 2;
          var offY = (r.height * scale - full[3]) / 2;
          var x = full[0] + (ev.clientX - r.left) * scale - offX;
          var y = full[1] + (ev.clientY - r.top) * scale - offY;
          var v = shown();
          show([x - v[2] / 2, y - v[3] / 2, v[2], v[3]]);
        }
        var miniDrag = false;
        mini.addEventListener("pointerdown", function (ev) { miniDrag = true; centre(ev); });
        mini.addEventListener("pointermove", function (ev) { if (miniDrag) centre(ev); });
        window.addEventListener("pointerup", function () { miniDrag = false; });
      }

      if (views[index]) {
        svg.setAttribute("viewBox", views[index]);
        if (mini) drawMini();
      } else {
        show(natural());
      }
    });
  }

  // A closed task group is a node of its own; a click (or Enter) on it, or on an open
  // group's label, asks the server for the graph with that group opened or closed (the
  // "expand" query parameter, kept in the address for the live refreshes and a reload)
  // and puts it in place of the old one.
  function toggleGroup(el) {
    var card = el.closest(".graph-card");
    var cards = Array.prototype.slice.call(document.querySelectorAll(".graph-card"));
    var index = cards.indexOf(card);
    var after = el.closest("[data-expand]").getAttribute("data-expand");
    var url = new URL(window.location.href);
    if (after) url.searchParams.set("expand", after);
    else url.searchParams.delete("expand");
    fetch(url.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelectorAll(".graph-card")[index];
        if (!fresh) return;
        delete views[index];
        card.replaceWith(document.importNode(fresh, true));
        window.history.replaceState(window.history.state, "", url.toString());
        wire();
      });
  }

  function groupTarget(ev) {
    return ev.target.closest && ev.target.closest("svg.graph .group-node, svg.graph .group-label");
  }

  document.addEventListener("click", function (ev) {
    var el = groupTarget(ev);
    if (!el) return;
    ev.preventDefault();
    toggleGroup(el);
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter" && ev.key !== " ") return;
    var el = groupTarget(ev);
    if (!el) return;
    ev.preventDefault();
    toggleGroup(el);
  });

  window.orchestratorGraphView = { wire: wire };
  document.addEventListener("DOMContentLoaded", wire);
})();
