"""`npm start`: the lanefetch demo (a small page behind an emulated slow link, in Chromium with the extension)."""
