"""Deployable units: each stack composes constructs from peagle_cdk/."""
