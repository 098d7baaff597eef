// Package deploy holds no code: its folder ships the Prometheus alerting
// rules (prometheus/hostloom-rules.yaml) and the Grafana dashboard
// (grafana/hostloom.json) built on the metrics HostLoom exports, and its
// test checks that they name only those metrics.
package deploy
