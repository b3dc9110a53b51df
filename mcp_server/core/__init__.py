"""Settings, errors, the stage dataclasses and logging: what every other layer stands on."""
