"""What a run gives its readers: finance exports, the HTML report, what-if pricing, `recon check`,
the run summary, and the formats they share (`present`)."""
