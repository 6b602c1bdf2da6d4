// Shows how long this page took: from the start of the navigation to the load event (all files arrived).
window.addEventListener("load", () => {
  setTimeout(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const seconds = ((nav.loadEventEnd || performance.now()) - nav.startTime) / 1000;
    const files = performance.getEntriesByType("resource").length;
    document.getElementById("load-time").textContent =
      `This page took ${seconds.toFixed(2)} s to load (${files} files after the page itself).`;
  }, 0);
});
