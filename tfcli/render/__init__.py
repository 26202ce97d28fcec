"""Renderers: result objects -> rich renderables, JSON or CSV. Renderers format; they never compute."""
