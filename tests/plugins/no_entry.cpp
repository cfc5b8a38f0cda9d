// A shared object that is not an Estuary plugin: it has no entry point.
extern "C" __attribute__((visibility("default"))) int estuary_test_not_a_plugin() { return 42; }
