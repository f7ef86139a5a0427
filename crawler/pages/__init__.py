"""Pure parsing of Underline answers: JSON:API documents and lecture pages in, lecture fields out."""
