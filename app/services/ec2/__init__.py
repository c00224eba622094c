"""EC2: launching the instances a benchmark runs on, and never leaving one running."""
