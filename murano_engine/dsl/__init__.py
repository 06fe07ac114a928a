"""The MuranoPL interpreter.

Data flows one way through these modules: ``yaml_loader`` reads class files,
``packages`` finds packages and their classes, ``classes`` builds types,
``expressions``/``compiler`` turn yaql into closures, ``instructions`` turns
method bodies into runnable blocks, ``executor`` builds objects from a model and
runs methods, and ``serializer`` writes the model back.
"""

from murano_engine.dsl.yaql_import import import_yaql

import_yaql()  # before any module here imports yaql: without pbr's costly version lookup
