"""Test scenarios served by the replica: hostile pages, planted cases, the seed pages' boilerplate."""
