// Gives each card a title from its icon's alt text, as a page's small widgets do.
for (const card of document.querySelectorAll(".card")) {
  const icon = card.querySelector("img");
  card.title = icon ? icon.alt : "";
}
