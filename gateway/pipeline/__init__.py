"""The request pipeline: route, attempt with retries and fallback, price, record."""
