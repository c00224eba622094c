"""The main window's parts: hosts sidebar, workload form, live run views, error panel."""
