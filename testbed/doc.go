// Package testbed drives the daemon from the outside, as a plant and an operator would: the
// simulated pump station closing the loop over MQTT (RunTestbed, `gbdmpc simulate --mqtt`), the
// soak run that watches the process's resources over many steps (RunSoak, `gbdmpc soak`), and the
// load test of N plants against mosquitto with a junk flood (RunLoad, `gbdmpc loadtest`). The
// daemon itself (package controller) only serves; both speak the payloads of package wire.
package testbed
