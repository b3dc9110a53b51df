"""Settings, errors, the stage dataclasses, logging and the thread seam: what every other layer stands on."""
