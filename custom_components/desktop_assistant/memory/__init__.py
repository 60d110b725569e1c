"""Long-term memory: pages, the tools that write and read them, the nightly pass."""
