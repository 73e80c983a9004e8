"""Server reflection under both service names clients ask for: v1 and v1alpha.

grpcio-reflection serves only `grpc.reflection.v1alpha.ServerReflection`,
while newer grpcurl, Postman and `buf curl` ask `grpc.reflection.v1` first.
The two protocols are wire-identical (v1 is the same file under a new
package), so one servicer answers both: the v1 service is registered with the
same implementation, and a v1 copy of the reflection file is added to the
descriptor pool so `describe grpc.reflection.v1.ServerReflection` works too.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

V1ALPHA_SERVICE_NAME: str = reflection.SERVICE_NAME
V1_SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
_V1ALPHA_PACKAGE = "grpc.reflection.v1alpha"
_V1_PACKAGE = "grpc.reflection.v1"


@cache
def _add_v1_descriptor() -> None:
    """Add grpc/reflection/v1/reflection.proto (the v1alpha file renamed) to the default pool once."""
    pool = descriptor_pool.Default()
    try:
        pool.FindServiceByName(V1_SERVICE_NAME)
        return  # another library already registered it
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = _V1_PACKAGE
    old, new = f".{_V1ALPHA_PACKAGE}.", f".{_V1_PACKAGE}."
    for message in proto.message_type:
        for field in message.field:
            if field.HasField("type_name"):
                field.type_name = field.type_name.replace(old, new)
    for service in proto.service:
        for method in service.method:
            method.input_type = method.input_type.replace(old, new)
            method.output_type = method.output_type.replace(old, new)
    pool.AddSerializedFile(proto.SerializeToString())


def enable_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> None:
    """Serve reflection v1 and v1alpha for `service_names` (both reflection services are listed too)."""
    _add_v1_descriptor()
    servicer = reflection.aio.ReflectionServicer([*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME])
    for name in (V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME):
        handler = grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": handler}),)
        )
