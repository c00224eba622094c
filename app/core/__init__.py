"""The pure domain: specs, results, statistics, costs, errors. No Qt, no network, no files."""
