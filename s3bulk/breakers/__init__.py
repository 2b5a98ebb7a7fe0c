"""The two rules that stop a job early, for both runtimes: an endpoint that stopped answering (outage) and objects that
fail systematically (failure)."""
