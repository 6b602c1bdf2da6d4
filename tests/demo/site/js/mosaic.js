// Marks the mosaic complete once every tile has arrived and decoded.
const tiles = Array.from(document.querySelectorAll("#mosaic img"));
Promise.all(tiles.map((t) => t.decode().catch(() => undefined))).then(() => {
  document.getElementById("mosaic").classList.add("done");
});
