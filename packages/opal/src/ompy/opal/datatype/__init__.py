"""The datatype engine: element types, typemaps, the convertor, architectures and conversion."""
