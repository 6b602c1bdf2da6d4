"""Between the engine and the consumer: what happens to a response on its way out (decoding to identity)."""
