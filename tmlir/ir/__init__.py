"""IR infrastructure over xDSL that the dialects, schedules and passes share."""
