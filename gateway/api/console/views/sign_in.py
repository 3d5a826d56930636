"""The sign-in page (docs/console.md#sign-in)."""

from __future__ import annotations

from gateway.api.console.html import (
    document,
    esc,
)


def sign_in_page(csrf: str, next_path: str, message: str | None, available: bool) -> str:
    notice = f'<p class="panel" role="alert">{esc(message)}</p>' if message else ""
    if not available:
        form = (
            '<p class="panel">No <code>auth.adminKey</code> is configured: '
            "the console cannot be signed in to.</p>"
        )
    else:
        form = (
            '<form method="post" action="/admin/sign-in">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'<input type="hidden" name="next" value="{esc(next_path)}">'
            '<label for="key">Admin key</label>'
            '<input id="key" name="key" type="password" autocomplete="current-password" '
            "required autofocus>"
            '<button type="submit" class="primary">Sign in</button></form>'
        )
    body = f'<main id="main" class="signin"><h1>Gateway console</h1>{notice}{form}</main>'
    return document("Sign in", body)
