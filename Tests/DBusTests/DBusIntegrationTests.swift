import Testing

/// Tests that run against a private dbus-daemon. They run one at a time: each starts its own daemon (and often
/// a Python or gdbus peer) on a small machine, and the leak test counts this process's descriptors and threads.
@Suite(.serialized) enum DBusIntegrationTests {}
