"""jiffyexp - the Jiffy experiments: load sweeps over server configurations, the SLO table, plots.

Modules: config (the TOML description of a sweep), servers (how each server of apps/ is started,
pinned and stopped), sweep (running points with jiffy-load and recording them), slo (the
"highest load meeting the SLO" rule and table), plot (PNG figures; the only module that needs
numpy/matplotlib). experiments/README.md explains the whole.
"""
