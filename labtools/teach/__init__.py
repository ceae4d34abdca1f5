"""Teaching: plots, notebook widgets and notebook tools. Thin: no measurement logic."""
