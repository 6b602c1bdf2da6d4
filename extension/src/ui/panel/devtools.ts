// The devtools_page: adds the "lanefetch" panel (the timing view for the inspected tab) to DevTools.
chrome.devtools.panels.create("lanefetch", "icons/32.png", "timing.html", () => undefined);
