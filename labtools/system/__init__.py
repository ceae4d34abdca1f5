"""The host and the VM: what this machine can do, the VM runner, cleaning up leftovers."""
