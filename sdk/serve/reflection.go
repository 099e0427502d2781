package serve

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// infrastructure services are served everywhere and never listed.
var infrastructure = map[string]bool{
	"grpc.health.v1.Health":                    true,
	"grpc.reflection.v1.ServerReflection":      true,
	"grpc.reflection.v1alpha.ServerReflection": true,
}

// listed is the reflection view of one server: its application services
// and the proto files they need.
type listed struct{ s *grpc.Server }

// GetServiceInfo lists the server's application services.
func (l listed) GetServiceInfo() map[string]grpc.ServiceInfo {
	out := map[string]grpc.ServiceInfo{}
	for name, info := range l.s.GetServiceInfo() {
		if !infrastructure[name] {
			out[name] = info
		}
	}
	return out
}

// files returns the paths of the files the listed services need.
func (l listed) files() map[string]bool {
	out := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if out[fd.Path()] {
			return
		}
		out[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
	}
	for name := range l.GetServiceInfo() {
		if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name)); err == nil {
			add(d.ParentFile())
		}
	}
	return out
}

// FindFileByPath answers only files the listed services need.
func (l listed) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if !l.files()[path] {
		return nil, fmt.Errorf("%s: %w", path, protoregistry.NotFound)
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

// FindDescriptorByName answers only symbols of files the listed services
// need.
func (l listed) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		return nil, err
	}
	if !l.files()[d.ParentFile().Path()] {
		return nil, fmt.Errorf("%s: %w", name, protoregistry.NotFound)
	}
	return d, nil
}

func registerReflection(s *Server) {
	l := listed{s: s.GRPC}
	opts := reflection.ServerOptions{Services: l, DescriptorResolver: l, ExtensionResolver: new(protoregistry.Types)}
	reflectionv1.RegisterServerReflectionServer(s, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(s, reflection.NewServer(opts))
}
