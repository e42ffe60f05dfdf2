#pragma once

class QWidget;

namespace tb::ui {

// For bench_gui_cold_start only: with TUNEBENCH_STARTUP_PROBE=1 in the
// environment, once `window` has been painted for the first time (its first
// expose), prints "first-frame-ns N" on stdout, N being the steady clock
// (CLOCK_MONOTONIC, shared by every process on the machine) at that moment,
// and quits the application. The benchmark read the same clock before
// starting the process, so the difference is the whole cold start: exec,
// loading the libraries, connecting to the display, building the window,
// the first frame. Returns whether the probe was armed.
bool armStartupProbe(QWidget* window);

} // namespace tb::ui
