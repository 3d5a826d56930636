"""The console's views: data (the same dicts the /admin/api endpoints answer) to HTML (pure),
a module per page. Each view is described in docs/console.md.
"""
