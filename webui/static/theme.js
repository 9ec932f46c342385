// Dark mode (issue 27): the page follows the system's prefers-color-scheme until the
// toggle in the top bar picks a theme; that choice is kept in localStorage
// ("orchestrator-theme": "dark" or "light") and set as <html data-theme>.
(function () {
  "use strict";
  var KEY = "orchestrator-theme";
  var root = document.documentElement;

  function stored() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "dark" || value === "light" ? value : null;
    } catch (e) {
      return null; // storage disabled: follow the system
    }
  }

  function systemDark() {
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function current() {
    return stored() || (systemDark() ? "dark" : "light");
  }

  function apply() {
    var chosen = stored();
    if (chosen) root.setAttribute("data-theme", chosen);
    else root.removeAttribute("data-theme");
    var button = document.querySelector(".theme-toggle");
    if (button) {
      var dark = current() === "dark";
      button.setAttribute("aria-pressed", dark ? "true" : "false");
      button.textContent = dark ? "Light mode" : "Dark mode";
    }
  }

  apply(); // before the body is drawn, when loaded in <head>
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.querySelector(".theme-toggle");
    apply();
    if (!button) return;
    button.addEventListener("click", function () {
      var next = current() === "dark" ? "light" : "dark";
      try {
        window.localStorage.setItem(KEY, next);
      } catch (e) {
        /* not kept: this page only */
      }
      root.setAttribute("data-theme", next);
      apply();
    });
  });
})();
