"""GCP resource components: every ComponentResource that creates a Google Cloud resource."""
