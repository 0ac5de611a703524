"""dsh's runtime: the kernel and the core services every deployment needs. It imports nothing from plugins/ or
replay/."""
