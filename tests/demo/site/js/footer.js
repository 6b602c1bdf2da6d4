// Footer line with the page's address, so a screenshot says where it came from.
document.getElementById("footer").textContent = `lanefetch demo site · ${location.href}`;
